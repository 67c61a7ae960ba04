import type { A2uiCatalog } from './a2ui-catalog.ts';

/**
 * The A2UI v0.9 basic catalog (18 components), from `@a2ui/web_core` 0.11.0's
 * `src/v0_9/schemas/catalogs/basic/catalog.json` by `catalogOfSchema`. Generated: change the
 * script or the package, not this file.
 */
export const A2UI_BASIC_CATALOG: A2uiCatalog = {
  catalogId: 'https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json',
  components: {
    Text: {
      properties: {
        text: {
          type: 'DynamicString',
          description:
            'The text content to display. While simple Markdown formatting is supported (i.e. without HTML, images, or links), utilizing dedicated UI components is generally preferred for a richer and more structured presentation.',
        },
        variant: {
          type: 'string',
          description: 'A hint for the base text style.',
          enum: ['h1', 'h2', 'h3', 'h4', 'h5', 'caption', 'body'],
        },
      },
      required: ['text'],
    },
    Image: {
      properties: {
        url: {
          type: 'DynamicString',
          description: 'The URL of the image to display.',
        },
        description: {
          type: 'DynamicString',
          description: 'Accessibility text for the image.',
        },
        fit: {
          type: 'string',
          description: "Specifies how the image should be resized to fit its container. This corresponds to the CSS 'object-fit' property.",
          enum: ['contain', 'cover', 'fill', 'none', 'scaleDown'],
        },
        variant: {
          type: 'string',
          description: 'A hint for the image size and style.',
          enum: ['icon', 'avatar', 'smallFeature', 'mediumFeature', 'largeFeature', 'header'],
        },
      },
      required: ['url'],
    },
    Icon: {
      properties: {
        name: {
          type: 'string | object | DataBinding',
          description: 'The name of the icon to display.',
          enum: [
            'accountCircle',
            'add',
            'arrowBack',
            'arrowForward',
            'attachFile',
            'calendarToday',
            'call',
            'camera',
            'check',
            'close',
            'delete',
            'download',
            'edit',
            'event',
            'error',
            'fastForward',
            'favorite',
            'favoriteOff',
            'folder',
            'help',
            'home',
            'info',
            'locationOn',
            'lock',
            'lockOpen',
            'mail',
            'menu',
            'moreVert',
            'moreHoriz',
            'notificationsOff',
            'notifications',
            'pause',
            'payment',
            'person',
            'phone',
            'photo',
            'play',
            'print',
            'refresh',
            'rewind',
            'search',
            'send',
            'settings',
            'share',
            'shoppingCart',
            'skipNext',
            'skipPrevious',
            'star',
            'starHalf',
            'starOff',
            'stop',
            'upload',
            'visibility',
            'visibilityOff',
            'volumeDown',
            'volumeMute',
            'volumeOff',
            'volumeUp',
            'warning',
          ],
        },
      },
      required: ['name'],
    },
    Video: {
      properties: {
        url: {
          type: 'DynamicString',
          description: 'The URL of the video to display.',
        },
      },
      required: ['url'],
    },
    AudioPlayer: {
      properties: {
        url: {
          type: 'DynamicString',
          description: 'The URL of the audio to be played.',
        },
        description: {
          type: 'DynamicString',
          description: 'A description of the audio, such as a title or summary.',
        },
      },
      required: ['url'],
    },
    Row: {
      description: 'A layout component that arranges its children horizontally. To create a grid layout, nest Columns within this Row.',
      properties: {
        children: {
          type: 'ChildList',
          description:
            'Defines the children. Use an array of strings for a fixed set of children, or a template object to generate children from a data list. Children cannot be defined inline, they must be referred to by ID.',
        },
        justify: {
          type: 'string',
          description:
            "Defines the arrangement of children along the main axis (horizontally). Use 'spaceBetween' to push items to the edges, or 'start'/'end'/'center' to pack them together.",
          enum: ['center', 'end', 'spaceAround', 'spaceBetween', 'spaceEvenly', 'start', 'stretch'],
        },
        align: {
          type: 'string',
          description:
            "Defines the alignment of children along the cross axis (vertically). This is similar to the CSS 'align-items' property, but uses camelCase values (e.g., 'start').",
          enum: ['start', 'center', 'end', 'stretch'],
        },
      },
      required: ['children'],
    },
    Column: {
      description: 'A layout component that arranges its children vertically. To create a grid layout, nest Rows within this Column.',
      properties: {
        children: {
          type: 'ChildList',
          description:
            'Defines the children. Use an array of strings for a fixed set of children, or a template object to generate children from a data list. Children cannot be defined inline, they must be referred to by ID.',
        },
        justify: {
          type: 'string',
          description:
            "Defines the arrangement of children along the main axis (vertically). Use 'spaceBetween' to push items to the edges (e.g. header at top, footer at bottom), or 'start'/'end'/'center' to pack them together.",
          enum: ['start', 'center', 'end', 'spaceBetween', 'spaceAround', 'spaceEvenly', 'stretch'],
        },
        align: {
          type: 'string',
          description: "Defines the alignment of children along the cross axis (horizontally). This is similar to the CSS 'align-items' property.",
          enum: ['center', 'end', 'start', 'stretch'],
        },
      },
      required: ['children'],
    },
    List: {
      properties: {
        children: {
          type: 'ChildList',
          description: 'Defines the children. Use an array of strings for a fixed set of children, or a template object to generate children from a data list.',
        },
        direction: {
          type: 'string',
          description: 'The direction in which the list items are laid out.',
          enum: ['vertical', 'horizontal'],
        },
        align: {
          type: 'string',
          description: 'Defines the alignment of children along the cross axis.',
          enum: ['start', 'center', 'end', 'stretch'],
        },
      },
      required: ['children'],
    },
    Card: {
      properties: {
        child: {
          type: 'ComponentId',
          description:
            "The ID of the single child component to be rendered inside the card. To display multiple elements, you MUST wrap them in a layout component (like Column or Row) and pass that container's ID here. Do NOT pass multiple IDs or a non-existent ID.",
        },
      },
      required: ['child'],
    },
    Tabs: {
      properties: {
        tabs: {
          type: 'array',
          description: 'An array of objects, where each object defines a tab with a title and a child component.',
          items: {
            properties: {
              title: {
                type: 'DynamicString',
                description: 'The tab title.',
              },
              child: {
                type: 'ComponentId',
                description: 'The ID of the child component.',
              },
            },
            required: ['title', 'child'],
          },
        },
      },
      required: ['tabs'],
    },
    Modal: {
      properties: {
        trigger: {
          type: 'ComponentId',
          description: 'The ID of the component that opens the modal when interacted with (e.g., a button).',
        },
        content: {
          type: 'ComponentId',
          description: 'The ID of the component to be displayed inside the modal.',
        },
      },
      required: ['trigger', 'content'],
    },
    Divider: {
      properties: {
        axis: {
          type: 'string',
          description: 'The orientation of the divider.',
          enum: ['horizontal', 'vertical'],
        },
      },
      required: [],
    },
    Button: {
      properties: {
        child: {
          type: 'ComponentId',
          description:
            "The ID of the child component. Use a 'Text' component for a labeled button. Only use an 'Icon' if the requirements explicitly ask for an icon-only button.",
        },
        variant: {
          type: 'string',
          description:
            "A hint for the button style. If omitted, a default button style is used. 'primary' indicates this is the main call-to-action button. 'borderless' means the button has no visual border or background, making its child content appear like a clickable link.",
          enum: ['default', 'primary', 'borderless'],
        },
        action: {
          type: 'Action',
        },
        checks: {
          type: 'array',
          description: 'A list of checks to perform. These are function calls that must return a boolean indicating validity.',
        },
      },
      required: ['child', 'action'],
    },
    TextField: {
      properties: {
        label: {
          type: 'DynamicString',
          description: 'The text label for the input field.',
        },
        value: {
          type: 'DynamicString',
          description: 'The value of the text field.',
        },
        variant: {
          type: 'string',
          description: 'The type of input field to display.',
          enum: ['longText', 'number', 'shortText', 'obscured'],
        },
        validationRegexp: {
          type: 'string',
          description: 'A regular expression used for client-side validation of the input.',
        },
        checks: {
          type: 'array',
          description: 'A list of checks to perform. These are function calls that must return a boolean indicating validity.',
        },
      },
      required: ['label'],
    },
    CheckBox: {
      properties: {
        label: {
          type: 'DynamicString',
          description: 'The text to display next to the checkbox.',
        },
        value: {
          type: 'DynamicBoolean',
          description: 'The current state of the checkbox (true for checked, false for unchecked).',
        },
        checks: {
          type: 'array',
          description: 'A list of checks to perform. These are function calls that must return a boolean indicating validity.',
        },
      },
      required: ['label', 'value'],
    },
    ChoicePicker: {
      description: 'A component that allows selecting one or more options from a list.',
      properties: {
        label: {
          type: 'DynamicString',
          description: 'The label for the group of options.',
        },
        variant: {
          type: 'string',
          description: 'A hint for how the choice picker should be displayed and behave.',
          enum: ['multipleSelection', 'mutuallyExclusive'],
        },
        options: {
          type: 'array',
          description: 'The list of available options to choose from.',
          items: {
            properties: {
              label: {
                type: 'DynamicString',
                description: 'The text to display for this option.',
              },
              value: {
                type: 'string',
                description: 'The stable value associated with this option.',
              },
            },
            required: ['label', 'value'],
          },
        },
        value: {
          type: 'DynamicStringList',
          description: 'The list of currently selected values. This should be bound to a string array in the data model.',
        },
        displayStyle: {
          type: 'string',
          description: 'The display style of the component.',
          enum: ['checkbox', 'chips'],
        },
        filterable: {
          type: 'boolean',
          description: 'If true, displays a search input to filter the options.',
        },
        checks: {
          type: 'array',
          description: 'A list of checks to perform. These are function calls that must return a boolean indicating validity.',
        },
      },
      required: ['options', 'value'],
    },
    Slider: {
      properties: {
        label: {
          type: 'DynamicString',
          description: 'The label for the slider.',
        },
        min: {
          type: 'number',
          description: 'The minimum value of the slider.',
        },
        max: {
          type: 'number',
          description: 'The maximum value of the slider.',
        },
        value: {
          type: 'DynamicNumber',
          description: 'The current value of the slider.',
        },
        checks: {
          type: 'array',
          description: 'A list of checks to perform. These are function calls that must return a boolean indicating validity.',
        },
      },
      required: ['value', 'max'],
    },
    DateTimeInput: {
      properties: {
        value: {
          type: 'DynamicString',
          description: 'The selected date and/or time value in ISO 8601 format. If not yet set, initialize with an empty string.',
        },
        enableDate: {
          type: 'boolean',
          description: 'If true, allows the user to select a date.',
        },
        enableTime: {
          type: 'boolean',
          description: 'If true, allows the user to select a time.',
        },
        min: {
          type: 'DynamicString',
          description: 'The minimum allowed date/time in ISO 8601 format.',
        },
        max: {
          type: 'DynamicString',
          description: 'The maximum allowed date/time in ISO 8601 format.',
        },
        label: {
          type: 'DynamicString',
          description: 'The text label for the input field.',
        },
        checks: {
          type: 'array',
          description: 'A list of checks to perform. These are function calls that must return a boolean indicating validity.',
        },
      },
      required: ['value'],
    },
  },
};
