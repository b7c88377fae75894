// Small helpers the calls page's modules share: element lookup, times and dates, the console's JSON API.

export const $ = (id) => document.getElementById(id);

export function formatSeconds(value) {
  if (typeof value !== 'number') return '–';
  const minutes = Math.floor(value / 60);
  const rest = (value - 60 * minutes).toFixed(1).padStart(4, '0');
  return minutes ? `${minutes}:${rest}` : `${value.toFixed(1)} s`;
}

export function formatStart(iso) {
  if (!iso) return '–';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function localDate(iso) {
  const date = new Date(iso || '');
  if (Number.isNaN(date.getTime())) return '';
  const pad = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

export async function getJson(url) {
  const response = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.detail || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

// Outcome codes that mean something went wrong (styled as warnings; the set itself comes from the server).
export function isFailure(code) {
  return typeof code === 'string' && (code.startsWith('failed') || code === 'crashed');
}
