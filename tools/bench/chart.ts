import type { Row, Summary } from './results.ts'

// chart.svg: throughput and p99 per scenario, latency against data size. Hand-written SVG, no
// dependencies.

const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-')
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-')
const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '' : `${(x * 100).toFixed(0)}%`)
const n = (x: number) => x.toLocaleString('en')

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const text = (x: number, y: number, s: string, attrs = '') => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`
const COLORS = { service: '#2563eb', baseline: '#9ca3af', p99: '#ea580c', p50: '#2563eb', pg: '#059669', grid: '#e5e7eb', ink: '#111827', muted: '#6b7280' }

function logTicks(max: number): number[] {
  const ticks = [1]
  while (ticks[ticks.length - 1] < max) ticks.push(ticks[ticks.length - 1] * 10)
  return ticks
}

/** A line chart of latency (linear ms) against a logarithmic size axis. */
function lineChart(x0: number, y0: number, w: number, h: number, title: string, xLabel: string, sizes: number[], series: Array<{ name: string; color: string; dash?: boolean; values: number[] }>): string[] {
  const out: string[] = [text(x0, y0 - 12, title, 'font-weight="600" font-size="13"')]
  const max = Math.max(1, ...series.flatMap((s) => s.values.filter(Number.isFinite))) * 1.15
  const minX = Math.log10(Math.min(...sizes))
  const maxX = Math.log10(Math.max(...sizes))
  const px = (size: number) => x0 + (maxX === minX ? w / 2 : ((Math.log10(size) - minX) / (maxX - minX)) * w)
  const py = (ms: number) => y0 + h - (ms / max) * h
  const step = Math.pow(10, Math.floor(Math.log10(max / 2)))
  for (let v = 0; v <= max; v += step * (max / step > 8 ? 2 : 1)) {
    out.push(`<line x1="${x0}" x2="${x0 + w}" y1="${py(v).toFixed(1)}" y2="${py(v).toFixed(1)}" stroke="${COLORS.grid}"/>`)
    out.push(text(x0 - 6, py(v) + 4, f0(v), `text-anchor="end" fill="${COLORS.muted}"`))
  }
  for (const size of sizes) out.push(text(px(size), y0 + h + 16, n(size), `text-anchor="middle" fill="${COLORS.muted}"`))
  out.push(text(x0 + w / 2, y0 + h + 32, xLabel, `text-anchor="middle" fill="${COLORS.muted}"`))
  out.push(text(x0 - 34, y0 + h / 2, 'ms', `text-anchor="middle" fill="${COLORS.muted}"`))
  series.forEach((s, i) => {
    const points = sizes.map((size, j) => [px(size), py(s.values[j])] as const).filter(([, y]) => Number.isFinite(y))
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ' stroke-dasharray="5 4"' : ''} points="${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ')}"/>`)
    for (const [x, y] of points) out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3" fill="${s.color}"/>`)
    const ly = y0 + 4 + i * 15
    out.push(`<line x1="${x0 + w + 12}" x2="${x0 + w + 30}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dash ? ' stroke-dasharray="5 4"' : ''}/>`)
    out.push(text(x0 + w + 34, ly + 4, s.name, `fill="${COLORS.ink}"`))
  })
  return out
}

// A group is a section's rows, or those of them whose id starts with a prefix: each group has a scale of its own.
const GROUPS: Array<[Row['section'], string, string?]> = [
  ['site', 'GET /<site>'],
  ['list', 'GET /<site>/discussions'],
  ['deep', 'GET /<site>/discussions, a deep page'],
  ['binary', 'GET /<site>/discussions: the single executable'],
  ['create', 'POST /<site>/categories/<id>/discussions'],
  ['pg', 'PostgreSQL: GET /<site>, against bare Fastify + pg', 'pg.site.'],
  ['pg', 'PostgreSQL: the listing and the deep page, against bare Fastify + pg', 'pg.list.'],
]
const inGroup = (r: Row, [section, , prefix]: (typeof GROUPS)[number]) =>
  r.section === section && (!prefix || r.id.startsWith(prefix) || (prefix === 'pg.site.' && r.id === 'pg.bare') || (prefix === 'pg.list.' && r.id.startsWith('pg.deep.')))

export function chart(summary: Summary): string {
  const W = 980
  const labelW = 300
  const barW = 270
  const rowH = 19
  const out: string[] = []
  out.push(text(20, 24, 'Service Desk: throughput and p99 per scenario (10,000 discussions)', 'font-weight="600" font-size="15"'))
  const rpsX = labelW
  const p99X = labelW + barW + 110
  const top = 56
  out.push(text(rpsX, top - 10, 'req/s (each group on its own scale; % of its pair, median of the rounds)', `fill="${COLORS.muted}"`))
  out.push(text(p99X, top - 10, 'p99 latency, ms (log scale)', `fill="${COLORS.muted}"`))
  const shown = summary.rows.filter((r) => GROUPS.some(([section]) => section === r.section))
  const ticks = logTicks(Math.max(...shown.map((r) => r.p99).filter(Number.isFinite)))
  const logMax = Math.log10(ticks[ticks.length - 1])
  const p99W = (ms: number) => (Math.max(0, Math.log10(Math.max(ms, 1))) / logMax) * barW
  let y = top
  for (const group of GROUPS) {
    const [section, title] = group
    const rows = shown.filter((r) => inGroup(r, group))
    if (rows.length === 0) continue
    out.push(text(20, y + 14, title, `font-weight="600" fill="${COLORS.ink}"`))
    y += rowH
    // The single executable is compared with the listing's baseline, so it shares its scale. A refusal
    // (the 401 path, which builds no page) is drawn off the scale rather than setting it.
    const scaleRows = (section === 'binary' ? [...rows, ...shown.filter((r) => r.section === 'list')] : rows).filter((r) => !r.id.endsWith('.none'))
    const maxRps = Math.max(...scaleRows.map((r) => r.rps).filter(Number.isFinite)) * 1.15
    for (const r of rows) {
      const baseline = r.id.includes('.baseline')
      out.push(text(labelW - 8, y + 13, r.short, `text-anchor="end" fill="${COLORS.ink}"`))
      const offScale = r.rps > maxRps
      const w = Number.isFinite(r.rps) ? (Math.min(r.rps, maxRps) / maxRps) * barW : 0
      out.push(`<rect x="${rpsX}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowH - 6}" fill="${baseline ? COLORS.baseline : COLORS.service}"${offScale ? ' fill-opacity="0.45"' : ''}/>`)
      out.push(text(rpsX + w + 4, y + 13, `${f0(r.rps)}${r.ratio === undefined ? '' : ` (${pct(r.ratio.median)})`}${offScale ? ' (off scale)' : ''}`, `fill="${COLORS.ink}"`))
      const pw = Number.isFinite(r.p99) ? p99W(r.p99) : 0
      out.push(`<rect x="${p99X}" y="${y + 3}" width="${pw.toFixed(1)}" height="${rowH - 6}" fill="${baseline ? COLORS.baseline : COLORS.p99}"/>`)
      out.push(text(p99X + pw + 4, y + 13, f1(r.p99), `fill="${COLORS.ink}"`))
      y += rowH
    }
    y += 6
  }
  const barsBottom = y
  // The grid goes under the bars: after the three header texts.
  const grid = ticks.flatMap((t) => {
    const x = p99X + p99W(t)
    return [
      `<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${top - 4}" y2="${barsBottom}" stroke="${COLORS.grid}"/>`,
      text(x, barsBottom + 14, f0(t), `text-anchor="middle" fill="${COLORS.muted}"`),
    ]
  })
  out.splice(3, 0, ...grid)

  const chartsTop = barsBottom + 70
  // Both engines on one axis of sizes; a size one engine did not run is left out of its lines.
  const sizes = [...new Set([...summary.scale, ...summary.pgScale].map((s) => s.size))].sort((a, b) => a - b)
  const at = (points: Summary['scale'], pick: (p: Summary['scale'][number]) => number) => sizes.map((size) => {
    const point = points.find((p) => p.size === size)
    return point ? pick(point) : NaN
  })
  const scaleSeries = [
    ...(summary.scale.length
      ? [
          { name: 'service p99', color: COLORS.p99, values: at(summary.scale, (s) => s.service.p99) },
          { name: 'service p50', color: COLORS.p50, values: at(summary.scale, (s) => s.service.p50) },
          { name: 'baseline p99', color: COLORS.p99, dash: true, values: at(summary.scale, (s) => s.baseline.p99) },
          { name: 'baseline p50', color: COLORS.p50, dash: true, values: at(summary.scale, (s) => s.baseline.p50) },
        ]
      : []),
    ...(summary.pgScale.length
      ? [
          { name: 'PostgreSQL: service p99', color: COLORS.pg, values: at(summary.pgScale, (s) => s.service.p99) },
          { name: 'PostgreSQL: baseline p99', color: COLORS.pg, dash: true, values: at(summary.pgScale, (s) => s.baseline.p99) },
        ]
      : []),
  ]
  if (sizes.length) out.push(...lineChart(70, chartsTop, 290, 180, 'Listing latency against discussions stored', 'discussions (log scale)', sizes, scaleSeries))
  if (summary.tokens.length) {
    out.push(
      ...lineChart(560, chartsTop, 230, 180, 'Token look-up (GET /<site>) against tokens stored', 'personal tokens stored (log scale)', summary.tokens.map((t) => t.size), [
        { name: 'p99', color: COLORS.p99, values: summary.tokens.map((t) => t.row.p99) },
        { name: 'p50', color: COLORS.p50, values: summary.tokens.map((t) => t.row.p50) },
      ]),
    )
  }
  const H = chartsTop + 180 + 50
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    ...out,
    '</svg>',
    '',
  ].join('\n')
}
