// Records read by column name: a row's snake_case columns become the
// camelCase fields of the record (user_id -> userId), for every verb of the
// store (src/store/sql/).

/** A row as the driver answers it: timestamps as ISO text (both backends), booleans as 0/1 on SQLite. */
type Row = Record<string, unknown>;

/**
 * A reader of one kind of record: each column becomes the field of its camelCase name (user_id ->
 * userId: tables and records are named alike), except the table's `internal` columns; `convert`
 * turns the values the drivers answer where they are not of the field's type. Every statement a
 * reader reads answers its table's whole row (SELECT *, RETURNING *), so the columns are worked
 * out from the first row, once.
 */
export function reader<T>(
  convert: { [K in keyof T]?: (value: unknown) => T[K] } = {},
  internal: readonly string[] = [],
): (row: Row) => T {
  const to = convert as Record<string, ((value: unknown) => unknown) | undefined>;
  let fields: { column: string; field: string; to: ((value: unknown) => unknown) | undefined }[] | undefined;
  return (row) => {
    fields ??= Object.keys(row)
      .filter((column) => !internal.includes(column))
      .map((column) => {
        const field = column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
        return { column, field, to: to[field] };
      });
    const record: Row = {};
    for (let i = 0; i < fields.length; i++) {
      const { column, field, to } = fields[i] as (typeof fields)[number];
      record[field] = to === undefined ? row[column] : to(row[column]);
    }
    return record as T;
  };
}
