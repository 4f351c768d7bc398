"""A Lark (LALR) grammar of P4-16, written for analysis.

It follows the structure of the P4-16 specification's grammar, with two
liberties that only make it more forgiving: bodies may be empty or out of
order (a control without ``apply``, a ``transition`` among a state's
statements), and annotations are skipped by the lexer.

Like p4c, it relies on the lexer to tell type names from other names: the
token stream is post-processed (``TypeNames`` in ``p4_parser``) so that a
name known to denote a type arrives as ``TYPE_IDENTIFIER``, and a ``<`` that
opens the type arguments of a generic call (``packet.lookahead<h_t>()``)
arrives as ``GENERIC_LT``. With that, the grammar is LALR(1); the one
remaining shift/reduce conflict, the dangling ``else``, resolves as a shift.

Every construct with a body keeps its items in one list node (``*_body``,
``block``) so that error recovery can parse a header with an empty body and
put separately parsed items into it.
"""

GRAMMAR = r"""
start: declaration*

?declaration: const_decl
    | extern_decl
    | action_decl
    | parser_decl
    | control_decl
    | type_decl
    | package_decl
    | instantiation
    | function_decl
    | error_decl
    | match_kind_decl
    | ";" -> empty

// ---- names -------------------------------------------------------------------
// A name being declared or used as a value; some keywords double as names.
name: IDENTIFIER | TYPE_IDENTIFIER | soft_keyword
!soft_keyword: "apply" | "key" | "actions" | "entries" | "state" | "type" | "priority"
value_name: IDENTIFIER | soft_value_keyword
!soft_value_keyword: "key" | "type"
member: IDENTIFIER | TYPE_IDENTIFIER | soft_keyword
type_name: TYPE_IDENTIFIER | "." TYPE_IDENTIFIER

// ---- types ---------------------------------------------------------------------
?type_ref: base_type | named_type | specialized_type | stack_type | tuple_type
named_type: type_name
specialized_type: type_name "<" type_args ">"
stack_type: (named_type | specialized_type) "[" expression "]"
tuple_type: ("tuple" | "list") "<" type_args ">"
base_type: BOOL_T -> bool_type
    | ERROR_T -> error_type
    | STRING_T -> string_type
    | INT_T width? -> int_type
    | BIT_T width? -> bit_type
    | VARBIT_T width -> varbit_type
width: "<" (INTEGER | IDENTIFIER | "(" expression ")") ">"
type_args: type_arg ("," type_arg)*
?type_arg: type_ref | "_" -> dont_care | VOID -> void_type
type_params: ("<" | GENERIC_LT) name ("," name)* ">"

// ---- parameters ------------------------------------------------------------------
params: (param ("," param)*)?
param: direction? (type_ref | unknown_type) name ("=" expression)?
// a name not known as a type where only a type can stand: kept, so that it is
// reported as an undeclared type instead of failing the whole declaration
unknown_type: IDENTIFIER
!direction: "inout" | "in" | "out"

// ---- type declarations -----------------------------------------------------------------
?type_decl: header_decl | header_union_decl | struct_decl | enum_decl | typedef_decl | newtype_decl
header_decl: "header" name type_params? "{" field_body "}"
header_union_decl: "header_union" name type_params? "{" field_body "}"
struct_decl: "struct" name type_params? "{" field_body "}"
field_body: struct_field*
struct_field: (type_ref | unknown_type) name ";"
enum_decl: "enum" name "{" enum_body "}"
    | "enum" (base_type | named_type) name "{" enum_body "}" -> ser_enum_decl
enum_body: (enum_member ("," enum_member)* ","?)?
enum_member: name ("=" expression)?
typedef_decl: "typedef" type_ref name ";"
newtype_decl: "type" type_ref name ";"
error_decl: "error" "{" id_list "}"
match_kind_decl: "match_kind" "{" id_list "}"
id_list: (name ("," name)* ","?)?

// ---- externs, packages, parser and control types ----------------------------------------
extern_decl: "extern" extern_name type_params? "{" extern_body "}" -> extern_object
    | "extern" (base_type | VOID | named_type) name type_params? "(" params ")" ";" -> extern_function
extern_body: method_decl*
?method_decl: function_proto ";" -> method
    | TYPE_IDENTIFIER "(" params ")" ";" -> constructor
    | "abstract" function_proto ";" -> abstract_method
// (a separate rule for the object's name keeps LALR from merging this state with others)
extern_name: IDENTIFIER | TYPE_IDENTIFIER
function_proto: (type_ref | VOID) name type_params? "(" params ")"
package_decl: "package" name type_params? "(" params ")" ";"
parser_decl: "parser" name type_params? "(" params ")" ctor_params? parser_tail
parser_tail: ";" -> no_body
    | "{" parser_body "}"
control_decl: "control" name type_params? "(" params ")" ctor_params? control_tail
control_tail: ";" -> no_body
    | "{" control_body "}"
ctor_params: "(" params ")"

// ---- parsers ---------------------------------------------------------------------
parser_body: parser_item*
?parser_item: const_decl | var_decl | instantiation | value_set_decl | parser_state | ";" -> empty
parser_state: "state" name "{" state_body "}"
state_body: body_item*
transition: "transition" (state_ref ";" | select_expr)
state_ref: name
select_expr: "select" "(" expr_list ")" "{" select_body "}"
select_body: select_case*
select_case: keyset ":" state_ref ";"
?keyset: simple_keyset
    | "(" simple_keyset "," simple_keyset ("," simple_keyset)* ")" -> tuple_keyset
    | "(" special_keyset ")"
?simple_keyset: expression | special_keyset
?special_keyset: "default" -> default_keyset
    | "_" -> dont_care
    | expression "&&&" expression -> mask_keyset
    | expression ".." expression -> range_keyset
value_set_decl: "value_set" "<" type_arg ">" "(" expression ")" name ";"

// ---- controls, actions, tables ------------------------------------------------------------
control_body: control_item*
?control_item: const_decl | var_decl | instantiation | action_decl | table_decl | function_decl
    | "apply" block -> apply_block
    | ";" -> empty
action_decl: "action" name "(" params ")" block
function_decl: (type_ref | VOID) name type_params? "(" params ")" block
table_decl: "table" name "{" table_body "}"
table_body: table_property*
?table_property: "key" "=" "{" key_body "}" -> key_property
    | "actions" "=" "{" actions_body "}" -> actions_property
    | CONST? "entries" "=" "{" entries_body "}" -> entries_property
    | CONST? IDENTIFIER "=" expression ";" -> simple_property
key_body: key_element*
key_element: expression ":" name ";"
actions_body: action_ref*
action_ref: prefixed_name ("(" args ")")? ";"
prefixed_name: value_name | "." value_name
entries_body: entry*
entry: CONST? ("priority" "=" expression ":")? keyset ":" action_call ";"
action_call: prefixed_name ("(" args ")")?

// ---- declarations that are also statements --------------------------------------------------
const_decl: "const" type_ref name "=" expression ";"
var_decl: type_ref name ("=" expression)? ";"
instantiation: type_ref "(" args ")" name ";"

// ---- statements ------------------------------------------------------------------
?statement: assignment
    | call_statement
    | direct_application
    | if_statement
    | block
    | switch_statement
    | "exit" ";" -> exit_statement
    | "return" expression? ";" -> return_statement
    | ";" -> empty
    | const_decl
    | var_decl
    | instantiation
block: "{" block_body "}"
block_body: body_item*
?body_item: statement | transition
assignment: lvalue ("=" | COMPOUND_ASSIGN) expression ";"
COMPOUND_ASSIGN: "+=" | "-=" | "*=" | "/=" | "%=" | "&=" | "|=" | "^=" | "<<=" | ">>=" | "++=" | "|+|=" | "|-|="
call_statement: lvalue (GENERIC_LT type_args ">")? "(" args ")" ";"
direct_application: type_name "." "apply" "(" args ")" ";"
if_statement: "if" "(" expression ")" statement ("else" statement)?
switch_statement: "switch" "(" expression ")" "{" switch_body "}"
switch_body: switch_case*
switch_case: switch_label ":" block?
switch_label: "default" -> default_label
    | expression
?lvalue: path_root
    | lvalue "." member -> member_access
    | lvalue "[" expression "]" -> index_access
    | lvalue "[" expression ":" expression "]" -> slice_access
path_root: value_name | "." value_name | "this"

// ---- expressions -----------------------------------------------------------------------
expr_list: (expression ("," expression)*)?
args: (argument ("," argument)*)?
?argument: expression
    | value_name "=" expression -> named_argument
    | "_" -> dont_care
?expression: ternary
?ternary: lor | lor "?" expression ":" ternary -> conditional
?lor: land | lor "||" land -> binary
?land: bor | land "&&" bor -> binary
?bor: bxor | bor "|" bxor -> binary
?bxor: band | bxor "^" band -> binary
?band: equality | band "&" equality -> binary
?equality: relation | equality ("==" | "!=") relation -> binary
?relation: concat | relation ("<" | ">" | "<=" | ">=") concat -> binary
?concat: shift | concat "++" shift -> binary
?shift: additive | shift ("<<" | SHR) additive -> binary
?additive: multiplicative | additive ("+" | "-" | "|+|" | "|-|") multiplicative -> binary
?multiplicative: unary | multiplicative ("*" | "/" | "%") unary -> binary
?unary: postfix
    | ("!" | "~" | "-" | "+") unary -> prefix
    | "(" type_ref ")" unary -> cast
?postfix: primary
    | postfix "." member -> member_access
    | postfix "[" expression "]" -> index_access
    | postfix "[" expression ":" expression "]" -> slice_access
    | postfix "(" args ")" -> call
    | postfix GENERIC_LT type_args ">" "(" args ")" -> call
?primary: INTEGER -> integer
    | STRING -> string
    | "true" -> true
    | "false" -> false
    | "this" -> this
    | value_name -> name_ref
    | "." value_name -> name_ref
    | "error" "." member -> error_ref
    | type_name "." member -> type_member
    | type_name "(" args ")" -> construct
    | specialized_type "(" args ")" -> construct
    | "(" expression ")"
    | "{" expr_list "}" -> list_expression
    | "{" kv_pair ("," kv_pair)* ","? "}" -> struct_expression
    | "{" "#" "}" -> invalid_expression
    | "..." -> dots
kv_pair: name "=" expression

// ---- lexemes ------------------------------------------------------------------------
%declare TYPE_IDENTIFIER GENERIC_LT SHR
IDENTIFIER: /[A-Za-z_][A-Za-z0-9_]*/
INTEGER: /(\d+[ws])?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)/
STRING: /"(\\.|[^"\\\n])*"/
CONST: "const"
VOID: "void"
BOOL_T: "bool"
ERROR_T: "error"
STRING_T: "string"
INT_T: "int"
BIT_T: "bit"
VARBIT_T: "varbit"
// An annotation with its (balanced, up to three levels) argument list; @pragma takes the line.
ANNOTATION: /@pragma[^\n]*/ | /@[A-Za-z_][A-Za-z0-9_]*(\s*\((?:[^()"]|"(?:\\.|[^"\\])*"|\((?:[^()"]|"(?:\\.|[^"\\])*"|\([^()]*\))*\))*\)|\s*\[[^\]]*\])?/
%import common.WS
%ignore WS
%ignore ANNOTATION
"""
"""The grammar text (Lark EBNF)."""

START_RULES = (
    "start", "declaration", "body_item", "control_item", "parser_item", "table_property",
    "key_element", "action_ref", "entry", "select_case", "struct_field", "method_decl",
    "switch_case", "transition",
)
"""Start symbols: the whole file, and each kind of item error recovery parses on its own."""
