import { HttpAgent } from '@ag-ui/client';
import { ContextProvider } from '@lit/context';
import { Data, type Types } from '@a2ui/lit/0.8';
import { Context } from '@a2ui/lit/ui';
import { API, THREAD } from './api.ts';

// A page that renders what an awaken agent draws with render_a2ui (docs/plugins/generative-ui.md):
// the AG-UI client runs the `ui` agent, every `a2ui` activity's messages go to the published A2UI
// v0.8 renderer's message processor, and each surface it holds is an <a2ui-surface>.

const $ = (id: string): HTMLElement => document.getElementById(id) as HTMLElement;

/** A plain theme: the renderer asks for class maps per component and element; none are needed here. */
const none = {};
const parts = { container: none, element: none, label: none };
const THEME: Types.Theme = {
  components: {
    AudioPlayer: none,
    Button: none,
    Card: none,
    Column: none,
    CheckBox: parts,
    DateTimeInput: parts,
    Divider: none,
    Image: { all: none, icon: none, avatar: none, smallFeature: none, mediumFeature: none, largeFeature: none, header: none },
    Icon: none,
    List: none,
    Modal: { backdrop: none, element: none },
    MultipleChoice: parts,
    Row: none,
    Slider: parts,
    Tabs: { container: none, element: none, controls: { all: none, selected: none } },
    Text: { all: none, h1: none, h2: none, h3: none, h4: none, h5: none, caption: none, body: none },
    TextField: parts,
    Video: none,
  },
  elements: {
    a: none,
    audio: none,
    body: none,
    button: none,
    h1: none,
    h2: none,
    h3: none,
    h4: none,
    h5: none,
    iframe: none,
    input: none,
    p: none,
    pre: none,
    textarea: none,
    video: none,
  },
  markdown: { p: [], h1: [], h2: [], h3: [], h4: [], h5: [], ul: [], ol: [], li: [], a: [], strong: [], em: [] },
};

const processor = Data.createSignalA2uiMessageProcessor();
const host = $('surfaces');
new ContextProvider(host, { context: Context.themeContext, initialValue: THEME });

/** One <a2ui-surface> per surface the processor holds (a deleted surface goes). */
function render(): void {
  const surfaces = processor.getSurfaces();
  for (const el of [...host.querySelectorAll('a2ui-surface')]) if (!surfaces.has((el as HTMLElement).dataset['surfaceId'] ?? '')) el.remove();
  for (const [id, surface] of surfaces) {
    let el = host.querySelector(`a2ui-surface[data-surface-id="${CSS.escape(id)}"]`) as
      | (HTMLElement & { surfaceId: string; surface: unknown; processor: unknown })
      | null;
    if (el === null) {
      el = document.createElement('a2ui-surface') as HTMLElement & { surfaceId: string; surface: unknown; processor: unknown };
      el.dataset['surfaceId'] = id;
      host.append(el);
    }
    el.surfaceId = id;
    el.processor = processor;
    el.surface = surface;
  }
}

const agent = new HttpAgent({ url: `${API}/v1/ag-ui/agents/ui/runs`, threadId: THREAD });
let runs = 0;

$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = $('input') as HTMLInputElement;
  agent.messages.push({ id: `a2ui-user-${++runs}`, role: 'user', content: input.value });
  $('status').textContent = 'streaming';
  $('error').textContent = '';
  void agent
    .runAgent(
      { runId: `a2ui-run-${runs}` },
      {
        onActivitySnapshotEvent: ({ event }) => {
          if (event.activityType !== 'a2ui') return;
          processor.processMessages((event.content as { messages: Types.ServerToClientMessage[] }).messages);
          render();
        },
      },
    )
    .then(
      () => ($('status').textContent = 'done'),
      (err: unknown) => {
        $('error').textContent = err instanceof Error ? err.message : String(err);
        $('status').textContent = 'failed';
      },
    );
});
