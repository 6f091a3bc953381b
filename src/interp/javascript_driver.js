// The JavaScript context driver: one persistent node process per context,
// running each request's code in one vm context so state carries over, with
// the completion value of the last statement as the main result. Requests are
// JSON lines on stdin ({"code", "env_vars"}); events are E2B NDJSON lines on
// stdout, prefixed with the token from ABX_INTERP_TOKEN.
'use strict';
const fs = require('fs');
const readline = require('readline');
const util = require('util');
const vm = require('vm');
const { Console } = require('console');
const { Writable } = require('stream');

const token = process.env.ABX_INTERP_TOKEN || '';
delete process.env.ABX_INTERP_TOKEN;

function emit(event) {
  fs.writeSync(1, token + JSON.stringify(event) + '\n');
}

function outputStream(type) {
  return new Writable({
    write(chunk, encoding, done) {
      emit({ type, text: chunk.toString(), timestamp: new Date().toISOString() });
      done();
    },
  });
}

const userConsole = new Console({ stdout: outputStream('stdout'), stderr: outputStream('stderr') });
const sandbox = {
  console: userConsole,
  process,
  require,
  Buffer,
  URL,
  URLSearchParams,
  TextEncoder,
  TextDecoder,
  setTimeout,
  clearTimeout,
  setInterval,
  clearInterval,
  setImmediate,
  clearImmediate,
  queueMicrotask,
  structuredClone,
  fetch: globalThis.fetch,
};
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);

// SIGINT interrupts synchronous code (breakOnSigint) or an awaited promise;
// between executions it must not end the process.
let interruptAwait = null;
process.on('SIGINT', () => {
  if (interruptAwait) interruptAwait();
});

function resultText(value) {
  const text = util.inspect(value);
  return text.length >= 2 && text.startsWith("'") && text.endsWith("'") ? text.slice(1, -1) : text;
}

// The cell's frames only: drop those of node's vm and of this driver.
function cellStack(stack) {
  return stack
    .split('\n')
    .filter((line) => !/\((node:|\[eval\])|at \[eval\]|at sigintHandlersWrap/.test(line))
    .join('\n');
}

function emitError(error) {
  const isError = error instanceof Error || (error && typeof error.stack === 'string');
  emit({
    type: 'error',
    name: isError ? error.name : 'Error',
    value: isError ? error.message : String(error),
    traceback: isError ? cellStack(error.stack) : String(error),
  });
}

async function settle(value) {
  if (!value || typeof value.then !== 'function') return value;
  return Promise.race([
    value,
    new Promise((_, reject) => {
      interruptAwait = () => reject(Object.assign(new Error('interrupted'), { name: 'KeyboardInterrupt' }));
    }),
  ]).finally(() => {
    interruptAwait = null;
  });
}

function applyEnv(envVars) {
  const saved = {};
  for (const [key, value] of Object.entries(envVars || {})) {
    saved[key] = process.env[key];
    process.env[key] = String(value);
  }
  return () => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}

let count = 0;
async function execute(request) {
  count += 1;
  emit({ type: 'number_of_executions', execution_count: count });
  const restoreEnv = applyEnv(request.env_vars);
  try {
    const value = await settle(
      vm.runInContext(request.code || '', context, { filename: `cell ${count}`, breakOnSigint: true }),
    );
    if (value !== undefined) emit({ type: 'result', text: resultText(value), is_main_result: true });
  } catch (error) {
    if (error && error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') error.name = 'KeyboardInterrupt';
    emitError(error);
  } finally {
    restoreEnv();
  }
  emit({ type: 'end_of_execution' });
}

let queue = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  queue = queue.then(() => execute(JSON.parse(line)));
});
process.stdin.on('end', () => queue.then(() => process.exit(0)));
