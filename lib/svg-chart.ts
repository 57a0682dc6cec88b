import { escapeHtml } from './html.ts'

// Charts drawn on the server as plain SVG (issue 69; docs/decisions.md, "Reports"): the reports
// page needs no JavaScript and no chart library. A chart is an image with a title and a
// description (role="img"); the table beside it holds every figure, for a screen reader and for
// copying. Pure: figures in, markup out, every text escaped.

export interface Series {
  name: string
  /** One value per label; null: nothing to show (no time measured). */
  values: ReadonlyArray<number | null>
}

export interface ColumnChart {
  /** The chart's id, for its title and description. */
  id: string
  title: string
  /** What the values are, said after each (minutes, discussions, %). */
  unit: string
  labels: readonly string[]
  series: readonly Series[]
}

const WIDTH = 720
const HEIGHT = 260
const LEFT = 48
const BOTTOM = 36
const TOP = 12
/** The colours of the series, in order: dark enough on white for a 3:1 contrast (WCAG 1.4.11). */
const COLOURS = ['#2454d6', '#b45309', '#0f766e', '#7c3aed']

/** A round number at least `max` for the top of the axis (1, 2 or 5 times a power of ten). */
export function niceCeiling(max: number): number {
  if (max <= 0) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  return [1, 2, 5, 10].map((m) => m * power).find((n) => n >= max)!
}

/** How the figures are said in the description: each series' total or range. */
function described(chart: ColumnChart): string {
  const parts = chart.series.map((s) => {
    const shown = s.values.filter((v): v is number => v !== null)
    if (shown.length === 0) return `${s.name}: none`
    return `${s.name}: from ${Math.min(...shown)} to ${Math.max(...shown)} ${chart.unit}`
  })
  return `${chart.labels.length} ${chart.labels.length === 1 ? 'column' : 'columns'}, ${chart.labels[0] ?? ''} to ${chart.labels[chart.labels.length - 1] ?? ''}. ${parts.join('; ')}.`
}

/** A column chart: one group of columns per label, one column per series, with a legend. */
export function columnChart(chart: ColumnChart): string {
  const values = chart.series.flatMap((s) => s.values.filter((v): v is number => v !== null))
  const top = niceCeiling(Math.max(0, ...values))
  const plotWidth = WIDTH - LEFT - 8
  const plotHeight = HEIGHT - TOP - BOTTOM
  const slot = plotWidth / Math.max(1, chart.labels.length)
  const column = Math.max(1, (slot * 0.8) / Math.max(1, chart.series.length))
  const y = (v: number) => TOP + plotHeight - (v / top) * plotHeight
  const parts: string[] = []
  for (const tick of [0, top / 2, top]) {
    parts.push(`<line x1="${LEFT}" x2="${WIDTH - 8}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" stroke="#d9dee7"/>`)
    parts.push(`<text x="${LEFT - 6}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end" font-size="11" fill="#5b6475">${escapeHtml(String(tick))}</text>`)
  }
  chart.series.forEach((s, i) => {
    s.values.forEach((v, j) => {
      if (v === null || v <= 0) return
      const x = LEFT + j * slot + slot * 0.1 + i * column
      parts.push(`<rect x="${x.toFixed(1)}" y="${y(v).toFixed(1)}" width="${column.toFixed(1)}" height="${(TOP + plotHeight - y(v)).toFixed(1)}" fill="${COLOURS[i % COLOURS.length]}"><title>${escapeHtml(`${chart.labels[j]}: ${s.name} ${v} ${chart.unit}`)}</title></rect>`)
    })
  })
  // At most about twelve labels under the axis, so they never overlap; the table has them all.
  const every = Math.max(1, Math.ceil(chart.labels.length / 12))
  chart.labels.forEach((label, j) => {
    if (j % every !== 0) return
    parts.push(`<text x="${(LEFT + j * slot + slot / 2).toFixed(1)}" y="${HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11" fill="#5b6475">${escapeHtml(label.length > 12 ? `${label.slice(0, 11)}…` : label)}</text>`)
  })
  chart.series.forEach((s, i) => {
    const x = LEFT + i * 160
    parts.push(`<rect x="${x}" y="${HEIGHT - 12}" width="10" height="10" fill="${COLOURS[i % COLOURS.length]}"/>`)
    parts.push(`<text x="${x + 14}" y="${HEIGHT - 3}" font-size="11" fill="#1d2330">${escapeHtml(s.name)}</text>`)
  })
  const title = `${chart.id}-title`
  const desc = `${chart.id}-desc`
  return (
    `<svg class="chart" role="img" aria-labelledby="${title} ${desc}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">` +
    `<title id="${title}">${escapeHtml(chart.title)}</title><desc id="${desc}">${escapeHtml(described(chart))}</desc>` +
    parts.join('') +
    '</svg>'
  )
}
