// Response serialisers, compiled from each route's response schemas by
// fast-json-stringify as Fastify does, but on a route's first answer with a
// given status instead of at start-up: compiling them all up front was a
// large part of the time to first answer (docs/performance.md), and most
// statuses of most routes are rarely or never sent. The serialiser is still
// the schema's own (it drops what the schema does not list).
import SerializerSelector from "@fastify/fast-json-stringify-compiler";

type RouteDefinition = Parameters<ReturnType<ReturnType<typeof SerializerSelector>>>[0];
type Serializer = (document: unknown) => string;

export function buildSerializersOnFirstUse(
  externalSchemas?: unknown,
  options?: Parameters<ReturnType<typeof SerializerSelector>>[1],
): (route: RouteDefinition) => Serializer {
  const compile = SerializerSelector()(externalSchemas, options);
  return (route) => {
    let compiled: Serializer | undefined;
    return (document) => {
      compiled ??= compile(route);
      return compiled(document);
    };
  };
}
