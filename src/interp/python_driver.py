# The Python context driver: one long-lived process per code-interpreter
# context. Requests arrive as JSON lines on stdin ({"code", "env_vars"});
# events leave as E2B NDJSON lines on the original stdout, each prefixed with
# the token from ABX_INTERP_TOKEN so the host can tell them from stray output.
# The user's code sees fds 1 and 2 as pipes this driver drains, so output of
# os.write(1, ...) and of subprocesses is captured too.
# Standard library only; stays cheap to start (no heavy imports up front).
import _ast  # not `ast`: its pure-Python wrapper costs ~8 ms of every cold start
import json
import linecache
import os
import select
import signal
import sys
import threading
import time
import traceback
import warnings

TOKEN = os.environ.pop("ABX_INTERP_TOKEN", "")
os.environ.setdefault("MPLBACKEND", "Agg")
# plt.show() under Agg only warns; figures are sent after each execution.
warnings.filterwarnings("ignore", message=".*(non-GUI backend|non-interactive).*")

REQUESTS = os.fdopen(os.dup(0), "r", encoding="utf-8")
PROTOCOL_FD = os.dup(1)
CRASH_FD = os.dup(2)  # the driver's own failures, for the host's log
EMIT_LOCK = threading.Lock()
DRAIN_LOCK = threading.Lock()
RICH_FORMATS = (
    ("html", "_repr_html_"),
    ("markdown", "_repr_markdown_"),
    ("svg", "_repr_svg_"),
    ("png", "_repr_png_"),
    ("jpeg", "_repr_jpeg_"),
    ("pdf", "_repr_pdf_"),
    ("latex", "_repr_latex_"),
    ("json", "_repr_json_"),
    ("javascript", "_repr_javascript_"),
)


def b64(data):
    import base64  # only rich results need it; keep it off the cold start

    return base64.b64encode(data).decode("ascii")


def now():
    # time, not datetime: importing datetime costs ~6 ms of every cold start.
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % (t % 1 * 1e6)


def emit(event):
    line = (TOKEN + json.dumps(event) + "\n").encode("utf-8", "replace")
    with EMIT_LOCK:
        while line:
            line = line[os.write(PROTOCOL_FD, line):]


class CapturedFd:
    """Replaces fd `fd` with a pipe and turns what arrives into events."""

    def __init__(self, fd, kind):
        import codecs

        self.kind = kind
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.read_fd, write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.dup2(write_fd, fd)
        os.close(write_fd)

    def drain(self):
        """Emits everything currently in the pipe; caller holds DRAIN_LOCK."""
        while True:
            try:
                data = os.read(self.read_fd, 65536)
            except BlockingIOError:
                return
            text = self.decoder.decode(data)
            if text:
                emit({"type": self.kind, "text": text, "timestamp": now()})


def unbuffered_text(fd):
    import io

    buffered = io.BufferedWriter(io.FileIO(fd, "w", closefd=False))
    return io.TextIOWrapper(buffered, encoding="utf-8", errors="replace", line_buffering=True)


def start_capture():
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    streams = [CapturedFd(1, "stdout"), CapturedFd(2, "stderr")]
    # Line buffered: output streams line by line while the code runs (print
    # gives one event per line), and flush=True sends a partial line at once.
    sys.stdout = unbuffered_text(1)
    sys.stderr = unbuffered_text(2)
    sys.stdin = open(0, "r", closefd=False)

    def pump():
        by_fd = {s.read_fd: s for s in streams}
        while True:
            ready, _, _ = select.select(list(by_fd), [], [])
            with DRAIN_LOCK:
                for fd in ready:
                    by_fd[fd].drain()

    threading.Thread(target=pump, daemon=True).start()
    return streams


def flush_std():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass


def flush_output(streams):
    flush_std()
    with DRAIN_LOCK:
        for s in streams:
            s.drain()


def mime_bundle(value):
    text = repr(value)
    if len(text) >= 2 and text[0] == text[-1] == "'":
        text = text[1:-1]  # E2B strips one layer of quotes from text/plain
    bundle = {"text": text}
    for field, method in RICH_FORMATS:
        render = getattr(value, method, None)
        if not callable(render):
            continue
        try:
            data = render()
        except Exception:
            continue
        if isinstance(data, tuple):  # (data, metadata) form of _repr_*_
            data = data[0]
        if data is None:
            continue
        if isinstance(data, bytes):
            data = b64(data)
        bundle[field] = data
    return bundle


def emit_result(value, is_main):
    event = {"type": "result"}
    event.update(mime_bundle(value))
    event["is_main_result"] = is_main
    emit(event)


def display(*values):
    """IPython's display(): each value becomes a non-main result."""
    for value in values:
        emit_result(value, False)


def emit_figures():
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    import io

    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
        emit(
            {
                "type": "result",
                "text": repr(figure),
                "png": b64(buffer.getvalue()),
                "is_main_result": False,
            }
        )
    pyplot.close("all")


def emit_error(exc, skip_frames):
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None:
            tb = tb.tb_next
    name = type(exc).__name__
    if isinstance(exc, SyntaxError):
        lines = traceback.format_exception_only(type(exc), exc)
    else:
        lines = traceback.format_exception(type(exc), exc, tb)
    value = str(exc.code) if isinstance(exc, SystemExit) else str(exc)
    emit({"type": "error", "name": name, "value": value, "traceback": "".join(lines)})


class Interruptible:
    """SIGINT raises KeyboardInterrupt only while user code runs; a late
    interrupt that lands between executions must not kill the context."""

    active = False

    @classmethod
    def handler(cls, signum, frame):
        if cls.active:
            raise KeyboardInterrupt()


class EnvOverlay:
    def __init__(self, env_vars):
        self.env_vars = env_vars or {}
        self.saved = {}

    def __enter__(self):
        for key, value in self.env_vars.items():
            self.saved[key] = os.environ.get(key)
            os.environ[key] = str(value)

    def __exit__(self, *exc):
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_async(code, namespace):
    import asyncio

    return asyncio.run(eval(code, namespace))


def ipython_transforms(code):
    """What IPython does to a cell before Python sees it, as far as this driver
    goes: the cell is dedented (textwrap.dedent), and a `!cmd` line runs cmd in
    a shell (`x = !cmd` keeps its output lines). Line numbers stay the same."""
    import textwrap

    code = textwrap.dedent(code)
    if "!" not in code:
        return code
    import re

    in_strings = multiline_string_lines(code)
    lines = code.splitlines(True)
    for number, line in enumerate(lines, 1):
        if number in in_strings:
            continue
        match = re.match(r"^(\s*)(?:([\w.]+(?:\s*,\s*[\w.]+)*)\s*=\s*)?!(!?)(.*?)(\r?\n?)$", line)
        if match is None:
            continue
        indent, target, capture, command, end = match.groups()
        call = "__abx_shell__(%r, %s)" % (command, bool(target or capture))
        lines[number - 1] = indent + ("%s = %s" % (target, call) if target else call) + end
    return "".join(lines)


def multiline_string_lines(code):
    """Line numbers inside (not starting) multi-line strings, where a `!`
    at the start of a line is text, not a shell escape."""
    import io
    import tokenize

    inside = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return inside


def shell_escape(namespace):
    """The `!cmd` of a cell: {expr} and $name expand from the namespace as in
    IPython (left as written when they do not evaluate); the command runs in
    bash with the cell's stdout and stderr; `_exit_code` keeps its status."""

    def expand(command):
        import re

        def value(match):
            expression = match.group(1) or match.group(2)
            return str(eval(expression, namespace))

        try:
            return re.sub(r"\{([^{}]+)\}|(?<!\$)\$([A-Za-z_]\w*)", value, command).replace("$$", "$")
        except Exception:
            return command

    def run(command, capture):
        import subprocess

        flush_std()
        shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
        done = subprocess.run(
            [shell, "-c", expand(command)],
            stdout=subprocess.PIPE if capture else None,
            stdin=subprocess.DEVNULL,
        )
        namespace["_exit_code"] = done.returncode
        if capture:
            return done.stdout.decode("utf-8", "replace").splitlines()
        return None

    return run


def parse_cell(code, filename):
    """The cell's syntax tree and the code it was parsed from: as written
    when that compiles, else after IPython's transforms."""
    try:
        return compile(code, filename, "exec", _ast.PyCF_ONLY_AST), code
    except SyntaxError:
        transformed = ipython_transforms(code)
        if transformed == code:
            raise
    linecache.cache[filename] = (len(transformed), None, transformed.splitlines(True), filename)
    return compile(transformed, filename, "exec", _ast.PyCF_ONLY_AST), transformed


def evaluate(code, namespace, filename):
    """Runs a cell; returns (has_value, value) of its trailing expression."""
    flags = getattr(_ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    tree, code = parse_cell(code, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr) and not code.rstrip().endswith(";"):
        last = _ast.Expression(tree.body.pop().value)
    run_code_object(compile(tree, filename, "exec", flags=flags), namespace)
    if last is None:
        return False, None
    return True, run_code_object(compile(last, filename, "eval", flags=flags), namespace)


CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect (slow)


def run_code_object(compiled, namespace):
    if compiled.co_flags & CO_COROUTINE:
        return run_async(compiled, namespace)
    return eval(compiled, namespace)


def execute(request, namespace, count, streams):
    code = request.get("code", "")
    filename = "<cell %d>" % count
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    emit({"type": "number_of_executions", "execution_count": count})
    with EnvOverlay(request.get("env_vars")):
        try:
            Interruptible.active = True
            try:
                has_value, value = evaluate(code, namespace, filename)
            finally:
                Interruptible.active = False
            flush_output(streams)
            if has_value and value is not None:
                namespace["_"] = value
                emit_result(value, True)
        except BaseException as exc:  # the context outlives anything the cell does
            Interruptible.active = False
            flush_output(streams)
            emit_error(exc, skip_frames=driver_frames(exc))
    try:
        emit_figures()
    except Exception as exc:
        emit_error(exc, skip_frames=0)
    flush_output(streams)
    emit({"type": "end_of_execution"})


def driver_frames(exc):
    """How many leading traceback frames belong to this driver, not the cell."""
    count = 0
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell "):
        count += 1
        tb = tb.tb_next
    return count if tb is not None else 0


def main():
    signal.signal(signal.SIGINT, Interruptible.handler)
    streams = start_capture()
    namespace = {"__name__": "__main__", "__builtins__": __builtins__, "display": display}
    namespace["__abx_shell__"] = shell_escape(namespace)
    count = 0
    while True:
        try:
            line = REQUESTS.readline()
            if not line:
                return
            request = json.loads(line)
        except KeyboardInterrupt:
            continue
        count += 1
        execute(request, namespace, count, streams)


try:
    main()
except BaseException:
    os.write(CRASH_FD, traceback.format_exc().encode("utf-8", "replace"))
    raise SystemExit(70)
