// A bar chart of sign-ins and failed sign-ins, drawn as inline SVG with DOM
// calls: no chart library, no style attribute (the CSP allows no inline
// style). Colours come from console.css classes; sizes and positions are SVG
// presentation attributes set with setAttribute. The numbers are also given
// as a table, which is what a screen reader reads (the SVG is one image with
// a name saying what it shows and the totals).
import { h, table } from "./ui.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 640;
const HEIGHT = 220;
const LEFT = 40;
const BOTTOM = 24;
const TOP = 12;

function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  for (const child of children) element.append(typeof child === "string" ? document.createTextNode(child) : child);
  return element;
}

/**
 * @param {{ id: string, caption: string, buckets: Array<{ start: string, succeeded: number, failed: number }>,
 *   label: (start: string) => string, labelEvery: number, unit: string }} options
 */
export function signInChart({ id, caption, buckets, label, labelEvery, unit }) {
  const succeeded = buckets.reduce((sum, bucket) => sum + bucket.succeeded, 0);
  const failed = buckets.reduce((sum, bucket) => sum + bucket.failed, 0);
  const highest = Math.max(1, ...buckets.map((bucket) => Math.max(bucket.succeeded, bucket.failed)));
  const plotWidth = WIDTH - LEFT - 8;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slot = plotWidth / Math.max(1, buckets.length);
  const barWidth = Math.max(1, (slot - 4) / 2);
  const y = (value) => TOP + plotHeight - (value / highest) * plotHeight;

  const image = svg(
    "svg",
    {
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      role: "img",
      "aria-labelledby": `${id}-title`,
      class: "chart",
      id,
      preserveAspectRatio: "xMidYMid meet",
    },
    svg("title", { id: `${id}-title` }, `${caption}: ${succeeded} sign-ins and ${failed} failed, per ${unit}`),
  );
  // The scale: the base line, and the highest value at the top.
  image.append(
    svg("line", { x1: LEFT, y1: y(0), x2: WIDTH - 8, y2: y(0), class: "axis" }),
    svg("line", { x1: LEFT, y1: y(highest), x2: WIDTH - 8, y2: y(highest), class: "grid" }),
    svg("text", { x: LEFT - 6, y: y(highest) + 4, "text-anchor": "end", class: "tick" }, String(highest)),
    svg("text", { x: LEFT - 6, y: y(0) + 4, "text-anchor": "end", class: "tick" }, "0"),
  );
  buckets.forEach((bucket, i) => {
    const x = LEFT + i * slot + 2;
    const bar = (value, offset, kind) =>
      svg(
        "rect",
        { x: x + offset, y: y(value), width: barWidth, height: Math.max(0, y(0) - y(value)), class: `bar ${kind}` },
        svg("title", {}, `${label(bucket.start)}: ${value} ${kind === "succeeded" ? "sign-ins" : "failed"}`),
      );
    image.append(bar(bucket.succeeded, 0, "succeeded"), bar(bucket.failed, barWidth, "failed"));
    if (i % labelEvery === 0)
      image.append(
        svg("text", { x: x + barWidth, y: HEIGHT - 6, "text-anchor": "middle", class: "tick" }, label(bucket.start)),
      );
  });

  return h(
    "figure",
    { class: "chart-figure" },
    h("figcaption", {}, caption),
    image,
    h(
      "ul",
      { class: "legend" },
      h("li", {}, h("span", { class: "swatch succeeded", "aria-hidden": "true" }), `Sign-ins (${succeeded})`),
      h("li", {}, h("span", { class: "swatch failed", "aria-hidden": "true" }), `Failed sign-ins (${failed})`),
    ),
    h(
      "details",
      { class: "chart-table" },
      h("summary", {}, "The numbers as a table"),
      table(
        `${caption}, oldest first`,
        [unit === "hour" ? "Hour starting" : "Day", "Sign-ins", "Failed"],
        buckets.map((bucket) => [label(bucket.start), String(bucket.succeeded), String(bucket.failed)]),
      ),
    ),
  );
}
