"""A process drawn as SVG for the issue page: lanes as rows, nodes in columns by their distance
from the start, the enabled steps outlined, the steps taken filled. No BPMNDI needed: every
shipped and seed diagram is drawable the same way (R-HAR-3 on the web).

The colours written here are the light theme's; each shape and label also carries a class, which
the drawing's own style (STYLE, sent with it so pages without a diagram do not carry it) paints
from the theme's variables: the diagram follows a dark system theme with readable labels (issue
26 §8; tests/web/test_browser_reading.py measures each label's contrast in both themes)."""

from __future__ import annotations

from collections import deque
from xml.sax.saxutils import escape

from .model import ProcessModel

W, H, GAP_X, LANE_H, LEFT = 132, 44, 28, 84, 96

# Light, then dark: lanes, lines, text, and the idle / enabled / taken steps' fill and stroke.
STYLE = ("<style>.bpmn{--l:#f2f4f7;--l2:#fafafa;--ln:#d0d4da;--t:#1b1c1f;--tm:#4a4f57;--e:#6b6f76;"
         "--i:#fff;--is:#888;--n:#fff4cc;--ns:#c98a00;--k:#dfeedd;--ks:#4b8a45}"
         "@media (prefers-color-scheme:dark){.bpmn{--l:#1d1e22;--l2:#18191c;--ln:#34363c;--t:#e6e6e9;--tm:#b4b8bf;"
         "--e:#8b8f97;--i:#26282d;--is:#767a82;--n:#3b3015;--ns:#e0a93a;--k:#1b3223;--ks:#4cc27e}}"
         ".bpmn .lane{fill:var(--l);stroke:var(--ln)}.bpmn .lane.alt{fill:var(--l2)}.bpmn text{fill:var(--t)}"
         ".bpmn .lane-role,.bpmn .edge-name{fill:var(--tm)}.bpmn .edge{stroke:var(--e)}.bpmn .arrow{fill:var(--e)}"
         ".bpmn foreignObject div{color:var(--t)}"
         ".bpmn [data-state=idle]>:is(rect,circle,polygon){fill:var(--i);stroke:var(--is)}"
         ".bpmn [data-state=enabled]>:is(rect,circle,polygon){fill:var(--n);stroke:var(--ns)}"
         ".bpmn [data-state=taken]>:is(rect,circle,polygon){fill:var(--k);stroke:var(--ks)}</style>")


def _columns(model: ProcessModel) -> dict[str, int]:
    starts = [n.id for n in model.nodes.values() if n.kind == "startEvent"] or list(model.nodes)[:1]
    col = {s: 0 for s in starts}
    queue = deque(starts)
    while queue:  # breadth first: a back edge (a loop) never pushes a node further right
        nid = queue.popleft()
        for _, tgt in model.nodes[nid].outgoing:
            if tgt not in col:
                col[tgt] = col[nid] + 1
                queue.append(tgt)
    for nid in model.nodes:
        col.setdefault(nid, max(col.values(), default=0) + 1)
    return col


def svg(model: ProcessModel, enabled: set[str], taken: set[str]) -> str:
    lanes = list(model.lanes) or ["(no lanes)"]
    col = _columns(model)
    rows: dict[str, int] = {}
    for nid, node in model.nodes.items():
        rows[nid] = lanes.index(node.lane) if node.lane in lanes else 0
    # nodes sharing a cell are stacked with a small offset rather than drawn on top of each other
    seen: dict[tuple[int, int], int] = {}
    pos = {}
    for nid in sorted(model.nodes, key=lambda n: (col[n], rows[n], n)):
        cell = (col[nid], rows[nid])
        k = seen.get(cell, 0)
        seen[cell] = k + 1
        pos[nid] = (LEFT + col[nid] * (W + GAP_X), rows[nid] * LANE_H + 20 + k * 10)
    width = LEFT + (max(col.values(), default=0) + 1) * (W + GAP_X)
    height = len(lanes) * LANE_H
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
           f'height="{height}" role="img" aria-label="{escape(model.name)}" class="bpmn">', STYLE,
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto-start-reverse"><path class="arrow" d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>']
    for i, lane in enumerate(lanes):
        out.append(f'<rect class="lane{" alt" if i % 2 else ""}" x="0" y="{i * LANE_H}" width="{width}" height="{LANE_H}" fill="{"#fafafa" if i % 2 else "#f2f4f7"}" '
                   'stroke="#d0d4da"/>')
        role = model.lanes.get(lane, "")
        out.append(f'<text class="lane-name" x="8" y="{i * LANE_H + 22}" font-size="12" font-weight="bold">{escape(lane)}</text>'
                   f'<text class="lane-role" x="8" y="{i * LANE_H + 38}" font-size="11" fill="#555">{escape(role)}</text>')
    for nid, node in model.nodes.items():
        x1, y1 = pos[nid]
        for name, tgt in node.outgoing:
            x2, y2 = pos[tgt]
            back = col[tgt] <= col[nid]
            sx, sy = x1 + W, y1 + H / 2
            ex, ey = (x2, y2 + H / 2) if not back else (x2 + W / 2, y2 + H)
            path = (f"M{sx},{sy} C{sx + 20},{sy} {ex - 20},{ey} {ex},{ey}" if not back else
                    f"M{x1 + W / 2},{y1 + H} C{x1 + W / 2},{y1 + H + 30} {ex},{ey + 30} {ex},{ey}")
            out.append(f'<path class="edge" d="{path}" fill="none" stroke="#777" marker-end="url(#arrow)"/>')
            if name:
                out.append(f'<text class="edge-name" x="{(sx + ex) / 2}" y="{(sy + ey) / 2 - 4}" font-size="10" fill="#333" '
                           f'text-anchor="middle">{escape(name)}</text>')
    for nid, node in model.nodes.items():
        x, y = pos[nid]
        state = "enabled" if nid in enabled else "taken" if nid in taken else "idle"
        fill = {"enabled": "#fff4cc", "taken": "#dfeedd", "idle": "#ffffff"}[state]
        stroke = {"enabled": "#c98a00", "taken": "#4b8a45", "idle": "#888"}[state]
        sw = 3 if state == "enabled" else 1
        label = escape(node.name or node.id)
        title = f"<title>{escape(node.id)} — {state}</title>"
        if node.kind in ("startEvent", "endEvent"):
            out.append(f'<g data-node="{escape(nid)}" data-state="{state}">{title}<circle cx="{x + W / 2}" '
                       f'cy="{y + H / 2}" r="16" fill="{fill}" stroke="{stroke}" stroke-width="{4 if node.kind == "endEvent" else sw}"/>'
                       f'<text class="outside" x="{x + W / 2}" y="{y + H + 12}" font-size="10" text-anchor="middle">{label}</text></g>')
        elif node.kind.endswith("Gateway"):
            cx, cy = x + W / 2, y + H / 2
            mark = "+" if node.kind == "parallelGateway" else ("D" if node.gate == "decision" else
                                                               "J" if node.gate == "judgement" else "×")
            out.append(f'<g data-node="{escape(nid)}" data-state="{state}">{title}<polygon points="{cx},{cy - 22} '
                       f'{cx + 22},{cy} {cx},{cy + 22} {cx - 22},{cy}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>'
                       f'<text x="{cx}" y="{cy + 4}" font-size="12" text-anchor="middle">{mark}</text>'
                       f'<text class="outside" x="{cx}" y="{cy + 34}" font-size="10" text-anchor="middle">{label}</text></g>')
        else:
            dash = ' stroke-dasharray="6 3"' if node.kind == "callActivity" else ""
            out.append(f'<g data-node="{escape(nid)}" data-state="{state}">{title}<rect x="{x}" y="{y}" width="{W}" '
                       f'height="{H}" rx="8" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash}/>'
                       f'<foreignObject x="{x + 4}" y="{y + 2}" width="{W - 8}" height="{H - 4}">'
                       f'<div xmlns="http://www.w3.org/1999/xhtml" style="font-size:11px;line-height:1.2;'
                       f'text-align:center">{label}</div></foreignObject></g>')
    out.append("</svg>")
    return "".join(out)
