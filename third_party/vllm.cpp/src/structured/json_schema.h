// JSON Schema as GBNF.
//
// Supported: type (one or a list; string, number, integer, boolean, null,
// object, array), properties with required and optional keys (emitted in
// declaration order), additionalProperties (false / true / a schema;
// absent means none, as in OpenAI's strict mode), enum, const, anyOf,
// oneOf (as anyOf: the alternatives are not checked for exclusivity),
// allOf of objects (merged), $ref to #, #/$defs/... and #/definitions/...
// (recursion included), items, prefixItems (all emitted), minItems,
// maxItems, minLength, maxLength, pattern (regex.h; fullmatch, a subset of
// JSON Schema's search semantics), format (date, time, date-time, uuid,
// email), minimum / maximum / exclusiveMinimum / exclusiveMaximum for
// integers, and whole-number minimum / maximum for numbers (no exponent
// then). Annotations (title, description, default, examples, $schema, $id,
// $comment, deprecated, readOnly, writeOnly) are ignored.
//
// Numbers have at most kMaxIntegerDigits / kMaxFractionDigits digits
// (builtin_grammars.h), so a model cannot loop on digits.
//
// Anything else is refused with INVALID_ARGUMENT "JSON schema: ..." naming
// the keyword and where it is (a JSON pointer), as are malformed schemas.
#pragma once
#include <string>
#include <string_view>

namespace vllm::structured {

std::string json_schema_to_gbnf(std::string_view schema_json);

}  // namespace vllm::structured
