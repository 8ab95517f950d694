// Real image files, drawn as SVG and rasterised by sharp: for the console's tests, and the photos the
// fake Bot API serves in the Telegram demo. No test runner is needed to make them.
import sharp from 'sharp';

/** A landscape to look at (sky, sun, hills, sea) in colours taken from `hue`, drawn as SVG and rasterised by sharp. */
function scene(width: number, height: number, hue: number) {
  const horizon = Math.round(height * 0.62);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs>
      <linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">
        <stop offset="0" stop-color="hsl(${hue}, 70%, 45%)"/><stop offset="1" stop-color="hsl(${hue + 40}, 85%, 78%)"/>
      </linearGradient>
      <linearGradient id="sea" x1="0" y1="0" x2="0" y2="1">
        <stop offset="0" stop-color="hsl(${hue + 180}, 45%, 40%)"/><stop offset="1" stop-color="hsl(${hue + 200}, 55%, 18%)"/>
      </linearGradient>
    </defs>
    <rect width="100%" height="100%" fill="url(#sky)"/>
    <circle cx="${width * 0.68}" cy="${horizon - height * 0.12}" r="${Math.min(width, height) * 0.11}" fill="hsl(${hue + 50}, 95%, 88%)"/>
    <path d="M0 ${horizon} Q ${width * 0.25} ${horizon - height * 0.18} ${width * 0.5} ${horizon} T ${width} ${horizon - height * 0.05} V ${horizon} Z" fill="hsl(${hue + 120}, 30%, 30%)"/>
    <rect y="${horizon}" width="100%" height="${height - horizon}" fill="url(#sea)"/>
  </svg>`;
  return sharp(Buffer.from(svg));
}

/** A JPEG photo of `width` × `height`; different hues give different files. */
export function jpeg(width: number, height: number, hue: number): Promise<Buffer> {
  return scene(width, height, hue).jpeg({ quality: 85 }).toBuffer();
}

/** A PNG with transparency. */
export function png(width: number, height: number, hue: number): Promise<Buffer> {
  return scene(width, height, hue).removeAlpha().ensureAlpha(0.85).png().toBuffer();
}
