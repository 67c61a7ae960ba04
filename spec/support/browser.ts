import Chromium from '@sparticuz/chromium';
import { chromium, type Browser } from 'playwright-core';

/**
 * Headless Chromium as `@sparticuz/chromium` ships it in its npm package (no download step), but with
 * web security on — its default `--disable-web-security` would turn CORS off and a cross-origin test
 * would prove nothing — and as several processes (in one, closing a page closes the browser); no
 * background networking (this machine's network is closed).
 */
export async function launchChromium(): Promise<Browser> {
  const args = Chromium.args.filter((a) => a !== '--disable-web-security' && a !== '--single-process');
  return chromium.launch({
    executablePath: await Chromium.executablePath(),
    args: [...args, '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    headless: true,
  });
}
