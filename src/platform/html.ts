// Escaping text for an HTML page or mail, in an element or a quoted attribute:
// the five characters that could end either are written as character
// references. Every server-rendered page and mail escapes through this one.

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
