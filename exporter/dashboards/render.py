"""Turn the declared dashboards (model.py) into Grafana JSON via grafana-foundation-sdk."""
from __future__ import annotations

import json

from grafana_foundation_sdk.builders import (bargauge, common as cb, dashboard as db, heatmap,
                                             prometheus, stat, statetimeline, table, text,
                                             timeseries)
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as cm, dashboard as dm, text as tm

from . import model as m

DS = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
GRID_WIDTH = 24


def _thresholds(steps):
    return db.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps(
        [dm.Threshold(value=v, color=c) for v, c in steps])


def _target(q: m.Query, ref: str):
    t = (prometheus.Dataquery().ref_id(ref).expr(q.expr).legend_format(q.legend)
         .datasource(DS).format(q.format))
    return t.instant() if q.instant else t.range()


def _variables():
    def query_var(name, label, query, multi):
        v = (db.QueryVariable(name).label(label).datasource(DS).query(query)
             .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(dm.VariableSort.ALPHABETICAL_ASC)
             .include_all(True).all_value(".*").multi(multi))
        return v.current(dm.VariableOption(selected=True, text="All", value="$__all"))
    return [
        db.DatasourceVariable("datasource").label("Data source").type("prometheus"),
        query_var("job", "Job", "label_values(rl_run_info, job)", True),
        query_var("namespace", "Namespace", 'label_values(rl_run_info{job=~"$job"}, namespace)', True),
        query_var("run", "Run", 'label_values(rl_run_info{job=~"$job", namespace=~"$namespace"}, run)',
                  True),
    ]


def _panel(p: m.Panel):
    kind = p.kind
    if kind == m.TIMESERIES:
        b = (timeseries.Panel().line_width(1).fill_opacity(40 if p.stack else 10)
             .show_points(cm.VisibilityMode.NEVER).span_nulls(False)
             .legend(cb.VizLegendOptions().show_legend(True).display_mode(cm.LegendDisplayMode.TABLE)
                     .placement(cm.LegendPlacement.BOTTOM).calcs(["lastNotNull", "min", "max"]))
             .tooltip(cb.VizTooltipOptions().mode(cm.TooltipDisplayMode.MULTI).sort(cm.SortOrder.DESCENDING)))
        if p.stack:
            b = b.stacking(cb.StackingConfig().mode(cm.StackingMode.NORMAL).group("A"))
        if p.log_scale:
            b = b.scale_distribution(cb.ScaleDistributionConfig().type(cm.ScaleDistribution.LOG).log(10))
        if p.thresholds:
            b = b.thresholds_style(cb.GraphThresholdsStyleConfig().mode(
                cm.GraphThresholdsStyleMode(p.threshold_style)))
    elif kind == m.STAT:
        b = (stat.Panel().color_mode(cm.BigValueColorMode.BACKGROUND).graph_mode(cm.BigValueGraphMode.AREA)
             .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False)))
    elif kind == m.TABLE:
        b = table.Panel().filterable(True)
        if p.sort_by:
            b = b.sort_by([cb.TableSortByFieldState().display_name(p.sort_by).desc(p.sort_desc)])
    elif kind == m.HEATMAP:
        b = (heatmap.Panel().calculate(False).cell_gap(1)
             .y_axis(heatmap.YAxisConfig().unit(p.unit))
             .color(heatmap.HeatmapColorOptions().mode("scheme").scheme("Spectral").fill("dark-orange")
                    .scale("exponential").exponent(0.5).steps(64).reverse(False))
             .show_legend().mode(cm.TooltipDisplayMode.SINGLE).show_y_histogram())
        b = b.rows_frame(heatmap.RowsHeatmapOptions().layout(cm.HeatmapCellLayout.AUTO))
    elif kind == m.STATE_TIMELINE:
        b = (statetimeline.Panel().show_value(cm.VisibilityMode.AUTO).merge_values(True).row_height(0.8)
             .fill_opacity(80).line_width(0)
             .legend(cb.VizLegendOptions().show_legend(True).display_mode(cm.LegendDisplayMode.LIST)
                     .placement(cm.LegendPlacement.BOTTOM)))
    elif kind == m.BARGAUGE:
        b = (bargauge.Panel().display_mode(cm.BarGaugeDisplayMode.GRADIENT)
             .orientation(cm.VizOrientation.HORIZONTAL).show_unfilled(True)
             .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False)))
    elif kind == m.TEXT:
        b = text.Panel().mode(tm.TextMode.MARKDOWN).content(p.content)
    else:  # pragma: no cover - model.Panel rejects other types
        raise ValueError(kind)
    b = b.title(p.title).description(p.description)
    if kind != m.TEXT:
        b = b.datasource(DS).unit(p.unit)
        if p.min is not None:
            b = b.min(p.min)
        if p.max is not None:
            b = b.max(p.max)
        if p.decimals is not None:
            b = b.decimals(p.decimals)
        b = b.thresholds(_thresholds(p.thresholds or [(None, "green")]))
        if p.thresholds and kind in (m.STATE_TIMELINE, m.BARGAUGE, m.STAT, m.TABLE):
            b = b.color_scheme(db.FieldColor().mode(dm.FieldColorModeId.THRESHOLDS))
        elif kind == m.TIMESERIES:
            b = b.color_scheme(db.FieldColor().mode(dm.FieldColorModeId.PALETTE_CLASSIC))
        for i, q in enumerate(p.queries):
            b = b.with_target(_target(q, chr(ord("A") + i)))
    return b


def _layout(rows: list[m.Row]):
    """(row, [(panel, x, y)]) with explicit grid positions: panels flow left to right."""
    y = 0
    out = []
    for r in rows:
        row_y = y
        y += 1
        x, line_h, placed = 0, 0, []
        for p in r.panels:
            if x + p.width > GRID_WIDTH:
                x, y, line_h = 0, y + line_h, 0
            placed.append((p, x, y))
            x += p.width
            line_h = max(line_h, p.height)
        y += line_h
        out.append((r, row_y, placed))
    return out


def _patch(panel_json: dict, p: m.Panel) -> None:
    """Fields the SDK types awkwardly: raw mappings, overrides, data links, transformations."""
    if p.kind == m.TEXT:
        panel_json.pop("datasource", None)
        panel_json.pop("targets", None)
        return
    defaults = panel_json.setdefault("fieldConfig", {}).setdefault("defaults", {})
    if p.mappings:
        defaults["mappings"] = p.mappings
    overrides = list(p.overrides or [])
    for link in p.links or []:
        overrides.append({"matcher": {"id": "byName", "options": link["field"]},
                          "properties": [{"id": "links", "value": [
                              {"title": link["title"], "url": link["url"]}]}]})
    if overrides:
        panel_json["fieldConfig"]["overrides"] = overrides
    if p.transformations:
        panel_json["transformations"] = p.transformations


def build(d: m.Dashboard, links: list[tuple[str, str]] = ()) -> dict:
    """The dashboard's Grafana JSON model as a plain dict."""
    b = (db.Dashboard(d.title).uid(d.uid).description(d.description).tags(d.tags)
         .refresh(d.refresh).time(d.time_from, "now").timezone("browser").editable()
         .tooltip(dm.DashboardCursorSync.CROSSHAIR).variables(_variables())
         .annotation(db.AnnotationQuery().name("Annotations & Alerts").datasource(
             dm.DataSourceRef(type_val="grafana", uid="-- Grafana --")).enable(True).hide(True)
             .icon_color("rgba(0, 211, 255, 1)").type("dashboard").built_in(1)))
    for title, uid in links:
        b = b.link(db.DashboardLink(title).type(dm.DashboardLinkType.LINK)
                   .url(f"/d/{uid}?${{__url_time_range}}&${{__all_variables}}")
                   .keep_time(True).include_vars(True).target_blank(False).as_dropdown(False)
                   .icon("dashboard").tooltip(title).tags([]))
    built = json.loads(json.dumps(b.build(), cls=JSONEncoder))
    panels = []
    next_id = 1
    for r, row_y, placed in _layout(d.rows):
        rj = json.loads(json.dumps(db.Row(r.title).collapsed(False).id(next_id)
                                   .grid_pos(dm.GridPos(h=1, w=24, x=0, y=row_y)).build(), cls=JSONEncoder))
        next_id += 1
        panels.append(rj)
        for p, x, y in placed:
            pj = json.loads(json.dumps(_panel(p).id(next_id).grid_pos(
                dm.GridPos(h=p.height, w=p.width, x=x, y=y)).build(), cls=JSONEncoder))
            next_id += 1
            _patch(pj, p)
            panels.append(pj)
    built["panels"] = panels
    return built


def dumps(dashboard_json: dict) -> str:
    return json.dumps(dashboard_json, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def dumps_min(dashboard_json: dict) -> str:
    return json.dumps(dashboard_json, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
