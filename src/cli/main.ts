import { readFileSync } from 'node:fs';

const USAGE = `usage: awaken <command>

commands:
  serve      run agents over HTTP/SSE with durable storage (not yet available)
  version    print the version
  help       print this text
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Entry point of the `awaken` command; returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command = 'help'] = argv;
  switch (command) {
    case 'serve':
      process.stderr.write(
        `awaken serve: not yet available in awaken-ts ${version()}.\n` +
          'This release ships the contract, the state engine and the phase engine (see README.md);\n' +
          'the HTTP server, run registry and stores arrive with the server milestone.\n',
      );
      return 2;
    case 'version':
    case '--version':
      process.stdout.write(`${version()}\n`);
      return 0;
    case 'help':
    case '--help':
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(`awaken: unknown command '${command}'\n${USAGE}`);
      return 64;
  }
}
