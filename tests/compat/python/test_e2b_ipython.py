"""The code interpreter as E2B's IPython kernel (issue 14 item 1): display data,
custom reprs, DataFrame `data`, images, and matplotlib figures with E2B's typed
chart, in code-interpreter-v1 (IPython from Debian); `base` keeps the lightweight
runner. Each test names the E2B code-interpreter test it mirrors."""
from __future__ import annotations

import datetime

import pytest
from e2b_code_interpreter import Sandbox
from e2b_code_interpreter.charts import (
    BarChart,
    BoxAndWhiskerChart,
    ChartType,
    LineChart,
    PieChart,
    ScatterChart,
    SuperChart,
)


@pytest.fixture
def ci():
    sb = Sandbox.create(timeout=120)
    yield sb
    sb.kill()


def only_chart(execution):
    assert execution.error is None, execution.error
    assert execution.results and execution.results[0].png, execution.results
    return execution.results[0].chart


def test_bar_chart(ci):
    """Mirrors charts/test_bar.py::test_chart_bar: bars with value, label (the
    category under the bar) and group (the bar set's label)."""
    chart = only_chart(
        ci.run_code(
            """
            import matplotlib.pyplot as plt
            plt.figure(figsize=(10, 6))
            plt.bar(['Author A', 'Author B'], [100, 200], label='Books Sold')
            plt.xlabel('Authors')
            plt.ylabel('Number of Books Sold')
            plt.title('Book Sales by Authors')
            plt.show()
            """
        )
    )
    assert isinstance(chart, BarChart) and chart.type == ChartType.BAR
    assert (chart.title, chart.x_label, chart.y_label) == ("Book Sales by Authors", "Authors", "Number of Books Sold")
    assert chart.x_unit is None and chart.y_unit is None
    assert [(b.label, b.value, b.group) for b in chart.elements] == [
        ("Author A", 100, "Books Sold"),
        ("Author B", 200, "Books Sold"),
    ]


def test_box_and_whisker_chart(ci):
    """Mirrors charts/test_box_and_whiskers.py::test_box_and_whiskers: each box's
    whiskers, quartiles, median and outliers as matplotlib computed them."""
    chart = only_chart(
        ci.run_code(
            """
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots()
            ax.set_title('Exam Scores Distribution')
            ax.set_xlabel('Class')
            ax.set_ylabel('Score')
            ax.boxplot([[85, 90, 78, 92, 88], [95, 89, 76, 91, 84, 87]], labels=['Class A', 'Class B'])
            plt.show()
            """
        )
    )
    assert isinstance(chart, BoxAndWhiskerChart) and chart.title == "Exam Scores Distribution"
    assert (chart.x_label, chart.y_label) == ("Class", "Score")
    boxes = [(b.label, b.min, b.first_quartile, b.median, b.third_quartile, b.max, b.outliers) for b in chart.elements]
    assert boxes == [("Class A", 78, 85, 88, 90, 92, []), ("Class B", 84, 84.75, 88, 90.5, 95, [76])]


def test_line_chart_with_dates_and_units(ci):
    """Mirrors charts/test_line.py::test_line_chart and test_scale.py::test_datetime_scale:
    dates as ISO strings, units from the labels' parentheses, scales by name."""
    chart = only_chart(
        ci.run_code(
            """
            import datetime
            import matplotlib.pyplot as plt
            dates = [datetime.date(2023, 9, 1) + datetime.timedelta(days=i) for i in range(10)]
            plt.plot(dates, [float(i) for i in range(10)], label='sin(x)')
            plt.xlabel("Time (s)")
            plt.ylabel("Amplitude (Hz)")
            plt.title('Plot')
            plt.show()
            """
        )
    )
    assert isinstance(chart, LineChart) and chart.title == "Plot"
    assert (chart.x_unit, chart.y_unit, chart.x_scale, chart.y_scale) == ("s", "Hz", "datetime", "linear")
    assert all(isinstance(t, str) for t in chart.x_ticks) and all(isinstance(t, float) for t in chart.y_ticks)
    assert all(isinstance(t, str) for t in chart.x_tick_labels + chart.y_tick_labels)
    [line] = chart.elements
    assert line.label == "sin(x)" and len(line.points) == 10
    first = datetime.datetime.fromisoformat(line.points[0][0])
    assert first == datetime.datetime(2023, 9, 1, tzinfo=datetime.UTC) and line.points[0][1] == 0.0


def test_log_and_categorical_scales(ci):
    """Mirrors charts/test_log_chart.py::test_log_chart and
    test_scale.py::test_categorical_scale."""
    log = only_chart(
        ci.run_code(
            """
            import numpy as np
            import matplotlib.pyplot as plt
            x = np.linspace(0, 100, 100)
            plt.plot(x, np.exp(x), label='y = e^x')
            plt.yscale('log')
            plt.ylabel('Y-axis (log scale)')
            plt.show()
            """
        )
    )
    assert isinstance(log, LineChart) and (log.x_scale, log.y_scale) == ("linear", "log")
    assert log.y_unit == "log scale" and len(log.elements[0].points) == 100
    categorical = only_chart(ci.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], ['A', 'B', 'C'])\nplt.show()"))
    assert (categorical.x_scale, categorical.y_scale) == ("linear", "categorical")
    assert [y for _, y in categorical.elements[0].points] == ["A", "B", "C"]


def test_pie_chart(ci):
    """Mirrors charts/test_pie.py::test_pie_chart: each wedge's label, angle and radius."""
    chart = only_chart(
        ci.run_code(
            """
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots()
            ax.pie([90, 10], labels=["No", "No, in blue"], startangle=90)
            plt.title('Will I wake up early tomorrow?')
            plt.show()
            """
        )
    )
    assert isinstance(chart, PieChart) and chart.title == "Will I wake up early tomorrow?"
    assert [(w.label, w.angle, w.radius) for w in chart.elements] == [("No", 324, 1), ("No, in blue", 36, 1)]


def test_scatter_and_super_chart(ci):
    """Mirrors charts/test_scatter.py::test_scatter_chart and
    test_superchart.py::test_super_chart: a figure of two axes is a superchart."""
    chart = only_chart(
        ci.run_code(
            """
            import matplotlib.pyplot as plt
            fig, axs = plt.subplots(1, 2)
            fig.suptitle('Multiple Charts Example')
            axs[0].plot([0, 1, 2], [0, 1, 0])
            axs[0].set_title('Line')
            axs[1].scatter([0.1, 0.2, 0.3], [1, 2, 3], label='Dataset 1')
            axs[1].set_xlabel('X')
            axs[1].set_title('Scatter Plot')
            plt.show()
            """
        )
    )
    assert isinstance(chart, SuperChart) and chart.title == "Multiple Charts Example"
    line, scatter = chart.elements
    assert isinstance(line, LineChart) and line.title == "Line" and line.x_label is None
    assert isinstance(scatter, ScatterChart) and scatter.x_label == "X" and scatter.title == "Scatter Plot"
    assert scatter.elements[0].label == "Dataset 1" and scatter.elements[0].points == [(0.1, 1.0), (0.2, 2.0), (0.3, 3.0)]


def test_unknown_chart(ci):
    """Mirrors charts/test_unknown.py::test_unknown_charts: a figure of shapes
    only is an `unknown` chart with its title and no elements."""
    chart = only_chart(
        ci.run_code(
            """
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots()
            ax.add_artist(plt.Circle((0, 0), 1, fill=False))
            plt.title('Two Concentric Circles')
            plt.show()
            """
        )
    )
    assert chart.type == ChartType.UNKNOWN and chart.title == "Two Concentric Circles" and chart.elements == []


def test_plot_shown_before_the_last_expression_comes_first(ci):
    """Results follow Jupyter's order: plt.show() displays at once, the cell's
    value comes after; a figure left open is shown after the value."""
    shown = ci.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n'last'")
    assert [bool(r.png) for r in shown.results] == [True, False]
    assert shown.results[1].is_main_result and shown.results[1].text == "last"
    left_open = ci.run_code("plt.plot([1, 2])\n'last'")
    assert [bool(r.png) for r in left_open.results] == [False, True]


def test_dataframe_has_data(ci):
    """Mirrors sync/test_data.py::test_data: a DataFrame result carries `data`."""
    execution = ci.run_code(
        """
        import pandas as pd
        pd.DataFrame({"a": [1, 2, 3]})
        """
    )
    result = execution.results[0]
    assert result.data and "a" in result.data and len(result.data["a"]) == 3
    assert result.html and "<table" in result.html


def test_display_raw_mime_bundle(ci):
    """Mirrors sync/test_custom_repr_object.py::test_bash: IPython.display.display
    of a raw MIME bundle is a result with exactly those formats."""
    execution = ci.run_code("from IPython.display import display\ndisplay({'text/latex': r'\\text{CustomReprObject}'}, raw=True)")
    assert execution.error is None and list(execution.results[0].formats()) == ["latex"]


def test_image_show_and_save_display_the_image(ci):
    """Mirrors images/test_images.py::test_show_image and test_get_image_on_save:
    PIL's Image.show() and Image.save(path) show the image as a PNG result."""
    setup = "from PIL import Image\nimage = Image.new('RGBA', (16, 16))\n"
    shown = ci.run_code(setup + "image.show()\nprint('Image shown.')")
    saved = ci.run_code(setup + "image.save('test.png')")
    assert shown.results[0].png and saved.results[0].png
    assert ci.files.exists("/home/user/test.png")


def test_magics_run(ci):
    """IPython's magics work: %cd changes the context's directory."""
    execution = ci.run_code("%cd /tmp\nimport os\nos.getcwd()")
    assert execution.error is None and execution.text == "/tmp"


def test_base_keeps_the_lightweight_runner():
    """`base` has no IPython: its Python contexts still dedent cells, run
    `!cmd` (mirrors sync/test_bash.py::test_bash) and show display() values."""
    sb = Sandbox.create(template="base", timeout=120)
    try:
        execution = sb.run_code(
            """
            !pwd
            display(41)
            40 + 2
            """
        )
        assert execution.error is None, execution.error
        assert "".join(execution.logs.stdout).strip() == "/home/user"
        assert [(r.text, r.is_main_result) for r in execution.results] == [("41", False), ("42", True)]
    finally:
        sb.kill()
