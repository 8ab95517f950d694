/** A size in bytes as people read it: `512 B`, `20.0 KiB`, `1.5 GiB`. */
export function byteSize(value: number): string {
  if (value < 1024) return `${value} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let scaled = value / 1024;
  let unit = 0;
  while (scaled >= 1024 && unit < units.length - 1) {
    scaled /= 1024;
    unit++;
  }
  return `${scaled.toFixed(1)} ${units[unit]}`;
}
