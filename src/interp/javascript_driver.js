// The JavaScript (and TypeScript) context driver: one persistent node process
// per context, running each request's code in one vm context so state carries
// over, with the completion value of the last statement as the main result.
// Requests are JSON lines on stdin ({"code", "env_vars"}); events are E2B
// NDJSON lines on stdout, prefixed with the token from ABX_INTERP_TOKEN.
// Started with the argument `typescript`, it first strips each cell's types
// with Debian's node-typescript (transpile only, no type check).
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

// A vm Script runs neither ESM `import` declarations nor top-level `await`.
// A cell that has either is parsed (with Debian's acorn, the parser node
// itself depends on) and rewritten the way node's REPL does it: the cell
// becomes the body of an async function, its top-level declarations become
// assignments to script-level `var`s (so they outlive the cell, and a later
// cell may declare them again, as in a notebook), each import becomes an
// awaited load, and the last expression statement is returned as the result.
function loadOptional(paths) {
  for (const path of paths) {
    try {
      return require(path);
    } catch (error) {
      if (error.code !== 'MODULE_NOT_FOUND') throw error;
    }
  }
  return null;
}

let acorn;
function parseCell(code) {
  if (acorn === undefined) acorn = loadOptional(['/usr/share/nodejs/acorn', 'acorn']);
  if (!acorn) return null; // node without acorn: cells run as plain scripts
  try {
    return acorn.parse(code, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowAwaitOutsideFunction: true,
      allowImportExportEverywhere: true,
      allowHashBang: true,
    });
  } catch {
    return null; // run it as it is: V8 reports the syntax error
  }
}

function isNode(value) {
  return value !== null && typeof value === 'object' && typeof value.type === 'string';
}

// Whether `node` awaits outside any function (for-await counts too).
function awaitsAtTopLevel(node) {
  if (node.type === 'AwaitExpression' || (node.type === 'ForOfStatement' && node.await)) return true;
  if (node.type.includes('Function')) return false;
  return Object.values(node).some((child) =>
    Array.isArray(child)
      ? child.some((item) => isNode(item) && awaitsAtTopLevel(item))
      : isNode(child) && awaitsAtTopLevel(child),
  );
}

function boundNames(pattern, names) {
  if (pattern.type === 'Identifier') names.push(pattern.name);
  else if (pattern.type === 'ObjectPattern') {
    for (const property of pattern.properties) {
      boundNames(property.type === 'RestElement' ? property.argument : property.value, names);
    }
  } else if (pattern.type === 'ArrayPattern') {
    for (const element of pattern.elements) if (element) boundNames(element, names);
  } else if (pattern.type === 'RestElement') boundNames(pattern.argument, names);
  else if (pattern.type === 'AssignmentPattern') boundNames(pattern.left, names);
  return names;
}

function importStatement(statement, hoisted) {
  const load = `await __abx_import(${JSON.stringify(statement.source.value)})`;
  if (statement.specifiers.length === 0) return `${load};`;
  const assignments = statement.specifiers.map((specifier) => {
    const local = specifier.local.name;
    hoisted.add(local);
    if (specifier.type === 'ImportDefaultSpecifier') return `${local} = __abx_import.defaultOf(__abx_module);`;
    if (specifier.type === 'ImportNamespaceSpecifier') return `${local} = __abx_module;`;
    const imported = specifier.imported.name ?? specifier.imported.value;
    return `${local} = __abx_module[${JSON.stringify(imported)}];`;
  });
  return `{ const __abx_module = ${load}; ${assignments.join(' ')} }`;
}

// The replacement text of one top-level statement, or null to keep it.
function rewriteStatement(code, statement, isLast, hoisted, functions) {
  const text = (node) => code.slice(node.start, node.end);
  switch (statement.type) {
    case 'ImportDeclaration':
      return importStatement(statement, hoisted);
    case 'VariableDeclaration': {
      const assignments = [];
      for (const declarator of statement.declarations) {
        for (const name of boundNames(declarator.id, [])) hoisted.add(name);
        if (declarator.init) assignments.push(`(${text(declarator.id)} = ${text(declarator.init)})`);
      }
      return assignments.length ? `void (${assignments.join(', ')});` : ';';
    }
    case 'ClassDeclaration':
      hoisted.add(statement.id.name);
      return `${statement.id.name} = ${text(statement)};`;
    case 'FunctionDeclaration':
      hoisted.add(statement.id.name);
      functions.push(statement.id.name);
      return null;
    case 'ExportNamedDeclaration': // `export {}`, as TypeScript emits for a module
      return statement.declaration || statement.specifiers.length ? null : ';';
    case 'ExpressionStatement':
      return isLast ? `return (${text(statement.expression)});` : null;
    default:
      return null;
  }
}

function collectNodes(node, type, found) {
  if (node.type === type) found.push(node);
  for (const child of Object.values(node)) {
    if (Array.isArray(child)) {
      for (const item of child) if (isNode(item)) collectNodes(item, type, found);
    } else if (isNode(child)) collectNodes(child, type, found);
  }
  return found;
}

// import(specifier) in a vm Script needs a loader callback, which node only
// takes with --experimental-vm-modules; the driver's own import() serves it.
function withDynamicImports(code, program) {
  const calls = collectNodes(program, 'ImportExpression', []);
  let rewritten = code;
  for (const call of calls.sort((a, b) => b.start - a.start)) {
    rewritten = `${rewritten.slice(0, call.start)}__abx_import.dynamic${rewritten.slice(call.start + 6)}`;
  }
  return rewritten;
}

// The cell as a vm Script can run it: unchanged unless it imports or awaits.
function runnableCell(original) {
  if (!/\b(import|await)\b/.test(original)) return original; // skips the parse for most cells
  let program = parseCell(original);
  if (!program) return original;
  const code = withDynamicImports(original, program);
  if (code !== original) program = parseCell(code);
  if (!program) return original;
  const body = program.body;
  if (!body.some((s) => s.type === 'ImportDeclaration') && !awaitsAtTopLevel(program)) return code;
  const hoisted = new Set();
  const functions = [];
  const edits = [];
  body.forEach((statement, index) => {
    const replacement = rewriteStatement(code, statement, index === body.length - 1, hoisted, functions);
    if (replacement !== null) edits.push({ start: statement.start, end: statement.end, replacement });
  });
  let rewritten = code;
  for (const { start, end, replacement } of edits.reverse()) {
    rewritten = rewritten.slice(0, start) + replacement + rewritten.slice(end);
  }
  // One line of prologue, so the cell's line numbers stay as the user wrote them.
  const declarations = hoisted.size ? `var ${[...hoisted].join(', ')}; ` : '';
  const publish = functions.map((name) => `__abx_global.${name} = ${name}; `).join('');
  return `${declarations}(async (__abx_global) => { ${publish}${rewritten}\n})(this)`;
}

// What an import declaration loads: require() first (node's builtins and
// CommonJS packages, resolved from the context's cwd as a script's are), and
// import() for ES modules, which require() refuses.
const esModules = new WeakSet();
async function importModule(specifier) {
  try {
    return require(specifier);
  } catch (error) {
    if (error.code !== 'ERR_REQUIRE_ESM') throw error;
  }
  const namespace = await import(specifier);
  esModules.add(namespace);
  return namespace;
}
importModule.dynamic = (specifier) => import(specifier);
importModule.defaultOf = (module) =>
  esModules.has(module) || (module && module.__esModule) ? module.default : module;
Object.defineProperty(sandbox, '__abx_import', { value: importModule });

let typescript = null;
if (process.argv[1] === 'typescript') {
  typescript = loadOptional(['/usr/share/nodejs/typescript', 'typescript']);
  if (!typescript) {
    process.stderr.write('typescript contexts need the typescript package (Debian: node-typescript)\n');
    process.exit(69);
  }
}

function diagnosticText(diagnostic) {
  const text = typescript.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
  if (!diagnostic.file || diagnostic.start === undefined) return text;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  return `${text} (line ${line + 1}, column ${character + 1})`;
}

// TypeScript cells lose their types (transpile only: no type check, as E2B's
// kernel runs them); syntax errors are reported as the compiler words them.
function javascriptOf(code) {
  if (!typescript) return code;
  const output = typescript.transpileModule(code, {
    reportDiagnostics: true,
    compilerOptions: {
      target: typescript.ScriptTarget.ES2022,
      module: typescript.ModuleKind.ESNext,
      removeComments: false,
    },
  });
  const errors = (output.diagnostics || []).filter(
    (d) => d.category === typescript.DiagnosticCategory.Error,
  );
  if (errors.length) {
    const message = errors.map(diagnosticText).join('\n');
    throw Object.assign(new SyntaxError(message), { stack: `SyntaxError: ${message}` });
  }
  return output.outputText;
}

let count = 0;
async function execute(request) {
  count += 1;
  emit({ type: 'number_of_executions', execution_count: count });
  const restoreEnv = applyEnv(request.env_vars);
  try {
    const code = runnableCell(javascriptOf(request.code || ''));
    const value = await settle(
      vm.runInContext(code, context, { filename: `cell ${count}`, breakOnSigint: true }),
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
