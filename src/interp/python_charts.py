# Chart extraction for the Python context driver: a matplotlib Figure becomes
# the typed chart E2B's SDKs parse (Result.chart): line, scatter, bar, pie,
# box_and_whisker, superchart (a figure of several axes) or unknown.
# Compiled by the driver only when a figure is shown, so a cell without
# matplotlib pays nothing for it. Reads only matplotlib's public Figure/Axes
# API, plus the box statistics the driver records when Axes.bxp draws them
# (the drawn box is a set of unrelated lines; its statistics are not kept).
import math
import re

BOX_STATS_ATTRIBUTE = "_abx_box_stats"


def figure_chart(figure):
    """The chart of `figure`, or None when it has no axes."""
    axes = [ax for ax in figure.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    if not axes:
        return None
    charts = [axes_chart(ax) for ax in axes]
    if len(charts) == 1:
        return charts[0]
    title = figure._suptitle.get_text() if getattr(figure, "_suptitle", None) else ""
    return {"type": "superchart", "title": title or None, "elements": charts}


def axes_chart(ax):
    title = ax.get_title() or None
    box_stats = getattr(ax, BOX_STATS_ATTRIBUTE, None)
    if box_stats:
        return with_axes_labels({"type": "box_and_whisker", "title": title, "elements": box_elements(box_stats)}, ax)
    wedges = pie_wedges(ax)
    if wedges:
        return {"type": "pie", "title": title, "elements": [pie_element(w) for w in wedges]}
    bars = bar_elements(ax)
    if bars:
        return with_axes_labels({"type": "bar", "title": title, "elements": bars}, ax)
    lines = [line for line in ax.get_lines() if line.get_visible()]
    scatters = [c for c in ax.collections if type(c).__name__ == "PathCollection" and c.get_visible()]
    if lines and not scatters:
        return point_chart("line", title, ax, [line_element(ax, line) for line in lines])
    if scatters and not lines:
        return point_chart("scatter", title, ax, [scatter_element(ax, c) for c in scatters])
    return {"type": "unknown", "title": title, "elements": []}


def with_axes_labels(chart, ax):
    for axis in ("x", "y"):
        label = getattr(ax, "get_%slabel" % axis)() or None
        chart[axis + "_label"] = label
        chart[axis + "_unit"] = unit_of(label)
    return chart


def unit_of(label):
    """The unit a label names in parentheses or brackets at its end: "Time (s)" → "s"."""
    if not label:
        return None
    match = re.search(r"[(\[]([^()\[\]]+)[)\]]\s*$", label)
    return match.group(1).strip() if match else None


def point_chart(kind, title, ax, elements):
    chart = with_axes_labels({"type": kind, "title": title, "elements": elements}, ax)
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        scale = scale_of(axis)
        chart[name + "_scale"] = scale
        chart[name + "_ticks"] = [axis_value(axis, scale, v) for v in axis.get_ticklocs()]
        chart[name + "_tick_labels"] = [t.get_text() for t in axis.get_ticklabels()]
    return chart


def scale_of(axis):
    """E2B's scale names: datetime and categorical axes by their formatter,
    the rest by matplotlib's scale name (linear, log, symlog, logit, ...)."""
    formatter = type(axis.get_major_formatter())
    module = formatter.__module__
    if module == "matplotlib.dates":
        return "datetime"
    if module == "matplotlib.category":
        return "categorical"
    return axis.get_scale()


def axis_value(axis, scale, value):
    """A data value as E2B sends it: an ISO date on a datetime axis, the
    category's name on a categorical one, else a float (null if not finite)."""
    if scale == "datetime":
        from matplotlib import dates

        try:
            return dates.num2date(value).isoformat()
        except (ValueError, OverflowError):
            return None
    if scale == "categorical":
        units = getattr(axis, "units", None)
        for name, index in getattr(units, "_mapping", {}).items():
            if index == value:
                return str(name)
    return finite(value)


def finite(value):
    value = float(value)
    return value if math.isfinite(value) else None


def line_element(ax, line):
    xy = line.get_xydata()
    return {"label": line.get_label(), "points": converted_points(ax, xy)}


def scatter_element(ax, collection):
    return {"label": collection.get_label(), "points": converted_points(ax, collection.get_offsets())}


def converted_points(ax, xy):
    x_scale, y_scale = scale_of(ax.xaxis), scale_of(ax.yaxis)
    return [[axis_value(ax.xaxis, x_scale, x), axis_value(ax.yaxis, y_scale, y)] for x, y in xy]


def pie_wedges(ax):
    wedges = [p for p in ax.patches if type(p).__name__ == "Wedge"]
    return wedges if wedges and len(wedges) == len(ax.patches) else []


def pie_element(wedge):
    return {"label": wedge.get_label(), "angle": round(abs(wedge.theta2 - wedge.theta1), 4), "radius": wedge.r}


def bar_elements(ax):
    elements = []
    for container in ax.containers:
        if type(container).__name__ != "BarContainer":
            continue
        horizontal = getattr(container, "orientation", "vertical") == "horizontal"
        label_axis = ax.yaxis if horizontal else ax.xaxis
        for bar in container.patches:
            if horizontal:
                center, value = bar.get_y() + bar.get_height() / 2, bar.get_width()
            else:
                center, value = bar.get_x() + bar.get_width() / 2, bar.get_height()
            elements.append({"label": tick_label_at(label_axis, center), "group": container.get_label(), "value": finite(value)})
    return elements


def tick_label_at(axis, position):
    """The tick label drawn at `position` (a bar's category), else the position."""
    for location, label in zip(axis.get_ticklocs(), axis.get_ticklabels()):
        if math.isclose(location, position, abs_tol=1e-9) and label.get_text():
            return label.get_text()
    return str(finite(position))


def box_elements(box_stats):
    elements = []
    for index, stats in enumerate(box_stats):
        elements.append(
            {
                "label": str(stats.get("label", index + 1)),
                "min": finite(stats["whislo"]),
                "first_quartile": finite(stats["q1"]),
                "median": finite(stats["med"]),
                "third_quartile": finite(stats["q3"]),
                "max": finite(stats["whishi"]),
                "outliers": [finite(v) for v in stats.get("fliers", [])],
            }
        )
    return elements


def record_box_stats(axes_class):
    """Wraps Axes.bxp (which boxplot calls) to keep the statistics it draws."""
    draw = axes_class.bxp

    def bxp(self, bxpstats, *args, **kwargs):
        stats = [dict(s) for s in bxpstats]
        setattr(self, BOX_STATS_ATTRIBUTE, (getattr(self, BOX_STATS_ATTRIBUTE, None) or []) + stats)
        return draw(self, stats, *args, **kwargs)

    bxp.__wrapped__ = draw
    bxp.__doc__ = draw.__doc__
    axes_class.bxp = bxp
