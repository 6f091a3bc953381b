# The Python context driver: one long-lived process per code-interpreter
# context. Requests arrive as JSON lines on stdin ({"code", "env_vars"});
# events leave as E2B NDJSON lines on the original stdout, each prefixed with
# the token from ABX_INTERP_TOKEN so the host can tell them from stray output.
# The user's code sees fds 1 and 2 as pipes this driver drains, so output of
# os.write(1, ...) and of subprocesses is captured too.
# Where IPython is importable (code-interpreter-v1) cells run through its
# InteractiveShell, as in E2B's Jupyter kernel (magics, display(), the
# formatters); elsewhere (base) a lightweight runner does the part of IPython
# most code needs (dedent, `!cmd`, display(), _repr_*_). Either way matplotlib
# figures are shown as Jupyter's inline backend shows them, with E2B's chart
# (python_charts.py, handed over as argv[1] and compiled on first use).
# Otherwise standard library only; stays cheap to start.
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
CHARTS_SOURCE = sys.argv.pop(1) if len(sys.argv) > 1 else ""
# The daemon sets MPLBACKEND=Agg for every context (headless); any other value
# is the user's choice, and wins over the inline backend.
USER_CHOSE_BACKEND = os.environ.get("MPLBACKEND", "agg").lower() != "agg"
# Subprocesses (`!python plot.py`) draw headless; this process uses INLINE_BACKEND.
os.environ.setdefault("MPLBACKEND", "Agg")
INLINE_BACKEND = "abx_inline_backend"
# plt.show() under a non-GUI backend the user chose only warns.
warnings.filterwarnings("ignore", message=".*(non-GUI backend|non-interactive).*")

REQUESTS = os.fdopen(os.dup(0), "r", encoding="utf-8")
PROTOCOL_FD = os.dup(1)
CRASH_FD = os.dup(2)  # the driver's own failures, for the host's log
EMIT_LOCK = threading.Lock()
DRAIN_LOCK = threading.Lock()
STREAMS = []  # the CapturedFd of fds 1 and 2, once capture starts
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
    try:
        text = json.dumps(event, allow_nan=False)
    except ValueError:  # NaN or infinity in a chart or a JSON result: JSON has no such numbers
        text = json.dumps(without_non_finite(event))
    line = (TOKEN + text + "\n").encode("utf-8", "replace")
    with EMIT_LOCK:
        while line:
            line = line[os.write(PROTOCOL_FD, line):]


def without_non_finite(value):
    if isinstance(value, float):
        return value if value - value == 0 else None
    if isinstance(value, dict):
        return {k: without_non_finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_non_finite(v) for v in value]
    return value


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
    STREAMS.extend(streams)

    def pump():
        by_fd = {s.read_fd: s for s in streams}
        while True:
            ready, _, _ = select.select(list(by_fd), [], [])
            with DRAIN_LOCK:
                for fd in ready:
                    by_fd[fd].drain()

    threading.Thread(target=pump, daemon=True).start()


def flush_std():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass


def flush_output():
    """Sends the output written so far, so that it comes before what follows."""
    flush_std()
    with DRAIN_LOCK:
        for s in STREAMS:
            s.drain()


def unquoted(text):
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]  # E2B strips one layer of quotes from text/plain
    return text


def mime_bundle(value):
    """The lightweight runner's formatter: repr and the _repr_*_ methods."""
    if is_instance_of(value, "matplotlib.figure", "Figure"):
        return figure_fields(value)
    bundle = {"text": unquoted(repr(value))}
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
    data = dataframe_data(value)
    if data is not None:
        bundle["data"] = data
    return bundle


def is_instance_of(value, module, name):
    """isinstance by name, without importing `module` when the cell did not."""
    cls = getattr(sys.modules.get(module), name, None)
    return cls is not None and isinstance(value, cls)


def dataframe_data(value):
    """E2B's `data` of a pandas DataFrame: its columns, each {index: value}."""
    if not is_instance_of(value, "pandas", "DataFrame"):
        return None
    try:
        return json.loads(value.to_json(orient="columns", date_format="iso", default_handler=str))
    except Exception:  # e.g. duplicate column names, which JSON objects cannot hold
        return None


MIME_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "e2b/data": "data",
}


def mime_fields(bundle):
    """A Jupyter MIME bundle as E2B's result fields; other types go to `extra`."""
    fields, extra = {}, {}
    for mime, data in bundle.items():
        if isinstance(data, bytes):
            data = b64(data)
        field = MIME_FIELDS.get(mime)
        if field is None:
            extra[mime] = data
        else:
            fields[field] = data
    if isinstance(fields.get("text"), str):
        fields["text"] = unquoted(fields["text"])
    if extra:
        fields["extra"] = extra
    return fields


def emit_fields(fields, is_main):
    flush_output()
    event = {"type": "result"}
    event.update(fields)
    event["is_main_result"] = is_main
    emit(event)


def display(*values):
    """IPython's display() for the lightweight runner: each value becomes a
    non-main result."""
    for value in values:
        emit_fields(mime_bundle(value), False)


SHOW = display  # shows one object: IPython's display() once a shell runs


# -- matplotlib: figures shown as Jupyter's inline backend shows them --------

CHARTS = None


def charts():
    """python_charts.py as a module, compiled on first use."""
    global CHARTS
    if CHARTS is None:
        import types

        CHARTS = types.ModuleType("abx_charts")
        exec(compile(CHARTS_SOURCE, "<abx charts>", "exec"), CHARTS.__dict__)
    return CHARTS


def figure_png(figure):
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def figure_fields(figure):
    fields = {"text": repr(figure), "png": b64(figure_png(figure))}
    try:  # after savefig: the figure is drawn, so tick labels are set
        chart = charts().figure_chart(figure)
    except Exception:  # a figure the extractor does not understand still shows
        chart = None
    if chart is not None:
        fields["chart"] = chart
    return fields


def show_figures(*args, **kwargs):
    """plt.show(): every open figure becomes a result now, then closes, so
    results keep the order of the cell (a plot shown before the last
    expression comes before its value)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    for number in pyplot.get_fignums():
        emit_fields(figure_fields(pyplot.figure(number)), False)
    pyplot.close("all")


class InlineBackendLoader:
    """Imports INLINE_BACKEND, the matplotlib backend this process uses unless
    the user chose one: Agg's canvas with show_figures as show()."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        from matplotlib.backends import backend_agg

        module.FigureCanvas = backend_agg.FigureCanvasAgg
        module.FigureManager = backend_agg.FigureManager
        module.show = show_figures


def use_inline_backend(matplotlib):
    if not USER_CHOSE_BACKEND:
        matplotlib.rcParams["backend"] = "module://" + INLINE_BACKEND


def record_box_stats(axes_module):
    charts().record_box_stats(axes_module.Axes)


# -- PIL: Image.show() and Image.save(path) show the image, as in E2B --------


def show_pil_images(image_module):
    image_class = image_module.Image
    save = image_class.save
    showing = threading.local()

    def show(self, *args, **kwargs):
        SHOW(self)

    def save_and_show(self, fp, *args, **kwargs):
        result = save(self, fp, *args, **kwargs)
        # A path, not a file object: _repr_png_ itself saves to a BytesIO.
        if isinstance(fp, (str, bytes, os.PathLike)) and not getattr(showing, "now", False):
            showing.now = True
            try:
                SHOW(self)
            finally:
                showing.now = False
        return result

    image_class.show = show
    image_class.save = save_and_show


class AfterImport:
    """A meta path finder that patches a module right after it is first
    imported (only modules named in `patches`; a failing patch is ignored),
    and finds INLINE_BACKEND."""

    def __init__(self, patches):
        self.patches = patches

    def find_spec(self, name, path=None, target=None):
        if name == INLINE_BACKEND:
            from importlib.machinery import ModuleSpec

            return ModuleSpec(name, InlineBackendLoader())
        patch = self.patches.get(name)
        if patch is None:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute_module = loader.exec_module

        def exec_module(module):
            execute_module(module)
            try:
                patch(module)
            except Exception:
                pass

        loader.exec_module = exec_module  # this spec's own loader instance
        return spec


def install_import_patches():
    patches = {"matplotlib": use_inline_backend, "matplotlib.axes": record_box_stats, "PIL.Image": show_pil_images}
    for name, patch in patches.items():
        if name in sys.modules:
            patch(sys.modules[name])
    sys.meta_path.insert(0, AfterImport(patches))


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


class LightweightRunner:
    """Runs cells without IPython: compile, exec, the trailing expression's value."""

    def __init__(self):
        self.namespace = {"__name__": "__main__", "__builtins__": __builtins__, "display": display}
        self.namespace["__abx_shell__"] = shell_escape(self.namespace)

    def run(self, code, count):
        filename = "<cell %d>" % count
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            Interruptible.active = True
            try:
                has_value, value = evaluate(code, self.namespace, filename)
            finally:
                Interruptible.active = False
            if has_value and value is not None:
                self.namespace["_"] = value
                emit_fields(mime_bundle(value), True)
        except BaseException as exc:  # the context outlives anything the cell does
            Interruptible.active = False
            flush_output()
            emit_error(exc, skip_frames=driver_frames(exc))


class IPythonRunner:
    """Runs cells through IPython's InteractiveShell, as E2B's kernel does:
    its display hook (the cell's value) and display publisher (display())
    emit results, its tracebacks become error events."""

    def __init__(self, shell):
        self.shell = shell

    def warm_up(self):
        """A first cell costs IPython tens of ms more than the next: pay it
        before the first user's, then forget it (names, In/Out, count)."""
        self.shell.run_cell("0", store_history=True)
        self.shell.reset(new_session=False)

    def run(self, code, count):
        self.shell.execution_count = count
        try:
            Interruptible.active = True
            try:
                self.shell.run_cell(code, store_history=True)
            finally:
                Interruptible.active = False
        except BaseException as exc:  # an interrupt outside the cell's own code
            Interruptible.active = False
            flush_output()
            emit_error(exc, skip_frames=0)


def ipython_runner():
    """An IPythonRunner when IPython is importable, else None."""
    try:
        from IPython.core.interactiveshell import InteractiveShell
    except ImportError:
        return None
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.formatters import JSONFormatter
    from traitlets import ObjectName, Type, Unicode
    from traitlets.config import Config

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            emit_fields(mime_fields(data), False)

        def clear_output(self, wait=False):
            pass

    class Hook(DisplayHook):
        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            emit_fields(mime_fields(format_dict), True)

        def finish_displayhook(self):
            pass

    class DataFormatter(JSONFormatter):
        """E2B's `data` field (a DataFrame's columns) as a MIME type of its own."""

        format_type = Unicode("e2b/data")
        print_method = ObjectName("_repr_e2b_data_")

    class Shell(InteractiveShell):
        displayhook_class = Type(Hook)
        display_pub_class = Type(Publisher)

        # `!cmd` as a plain child on the cell's stdout and stderr (as the
        # lightweight runner does), not through a pty: no "\r\n" line ends.
        system = InteractiveShell.system_raw

        def _showtraceback(self, etype, evalue, stb):
            flush_output()
            emit({"type": "error", "name": etype.__name__, "value": str(evalue), "traceback": "\n".join(stb)})

    if "SHELL" not in os.environ and os.path.exists("/bin/bash"):
        os.environ["SHELL"] = "/bin/bash"  # system_raw's shell, as in a terminal
    config = Config()
    config.HistoryManager.enabled = False  # no sqlite file per context
    config.InteractiveShell.colors = "NoColor"
    shell = Shell.instance(config=config)
    formatters = shell.display_formatter.formatters
    formatters["e2b/data"] = DataFormatter(parent=shell.display_formatter)
    formatters["e2b/data"].for_type_by_name("pandas.core.frame", "DataFrame", dataframe_data)
    formatters["image/png"].for_type_by_name("matplotlib.figure", "Figure", figure_png)
    global SHOW
    from IPython.display import display as ipython_display

    SHOW = ipython_display
    return IPythonRunner(shell)


def execute(request, runner, count):
    emit({"type": "number_of_executions", "execution_count": count})
    with EnvOverlay(request.get("env_vars")):
        runner.run(request.get("code", ""), count)
    try:  # figures the cell left open, after its value, as Jupyter's inline backend
        show_figures()
    except Exception as exc:
        emit_error(exc, skip_frames=0)
    flush_output()
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
    start_capture()
    install_import_patches()
    try:
        runner = ipython_runner() or LightweightRunner()
    except Exception:  # an IPython that does not start: the context still works
        os.write(CRASH_FD, traceback.format_exc().encode("utf-8", "replace"))
        runner = LightweightRunner()
    count = 0
    while True:
        try:
            line = REQUESTS.readline()
            if not line:
                return
            request = json.loads(line)
        except KeyboardInterrupt:
            continue
        if request.get("warm_up"):  # from the warm pool: ready once the runner is
            if hasattr(runner, "warm_up"):
                runner.warm_up()
            emit({"type": "end_of_execution"})
            continue
        count += 1
        execute(request, runner, count)


try:
    main()
except BaseException:
    os.write(CRASH_FD, traceback.format_exc().encode("utf-8", "replace"))
    raise SystemExit(70)
