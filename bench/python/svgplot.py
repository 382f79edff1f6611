"""A grouped horizontal bar chart written as SVG by hand (Debian 12's python3 has no
matplotlib unless python3-matplotlib is installed, and the bench should not need it)."""
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]


def bar_chart(path, title, labels, series, unit):
    """labels: one per group (a row of bars); series: [(name, [value or None per label])]."""
    bar_h, gap, left, right, top = 9, 8, 260, 90, 48
    group_h = bar_h * len(series) + gap
    width = 900
    height = top + group_h * len(labels) + 30
    vmax = max((v for _, vals in series for v in vals if v is not None), default=1.0) or 1.0
    scale = (width - left - right) / vmax
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>'
           % (left, escape(title))]
    for i, (name, _) in enumerate(series):
        x = left + i * 160
        out.append('<rect x="%d" y="28" width="10" height="10" fill="%s"/>'
                   % (x, COLORS[i % len(COLORS)]))
        out.append('<text x="%d" y="37">%s</text>' % (x + 14, escape(name)))
    for g, label in enumerate(labels):
        y0 = top + g * group_h
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                   % (left - 6, y0 + group_h / 2, escape(label)))
        for i, (_, vals) in enumerate(series):
            v = vals[g]
            if v is None:
                continue
            y = y0 + i * bar_h
            out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                       % (left, y, max(0.5, v * scale), bar_h - 1, COLORS[i % len(COLORS)]))
            out.append('<text x="%.1f" y="%d" font-size="9">%.3g %s</text>'
                       % (left + v * scale + 3, y + bar_h - 1, v, escape(unit)))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
