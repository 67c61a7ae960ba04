// Attacks a sandboxed Node tool makes on the machine that runs it (spec/runtime/sandbox.spec.ts).
// Each returns what it got; a barrier that holds throws, and the call ends as an error.
import { execSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';

const reach = (port) =>
  new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(`connected to 127.0.0.1:${port}`);
    });
    socket.on('error', reject);
  });

export const environment = ({ name }) => {
  if (process.env[name] !== undefined) return process.env[name];
  throw new Error(`${name} is not in the environment`);
};
export const secretFile = ({ path }) => readFileSync(path, 'utf8');
export const writeOutside = ({ path }) => {
  writeFileSync(path, 'escaped');
  return 'written';
};
export const spawnProcess = () => execSync('id -u').toString();
export const serverPort = ({ port }) => reach(port);
export const postgres = () => reach(5432);
export const unixSocket = ({ socket }) =>
  new Promise((resolve, reject) => {
    const s = connect({ path: socket }, () => {
      s.destroy();
      resolve(`connected to ${socket}`);
    });
    s.on('error', reject);
  });
export const sleepForever = () => new Promise(() => setInterval(() => undefined, 1_000));
export const loopForever = () => {
  for (;;);
};
export const allocate = () => {
  const held = [];
  for (let i = 0; i < 16; i++) held.push(new Uint8Array(256 * 1024 * 1024));
  return held.length;
};
export const print = () => {
  const line = `${'x'.repeat(1023)}\n`;
  for (let i = 0; i < 100 * 1024; i++) process.stdout.write(line);
  return 'printed';
};
