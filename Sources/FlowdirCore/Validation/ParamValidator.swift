/// Checks a node's params against its tool's param schema (`invalidParam`).
public enum ParamValidator {
    public static func check(_ params: [ParamEntry], node: NodeSpec, tool: ToolDefinition,
                             fallback: SourceLocation?) -> [Diagnostic] {
        guard !tool.acceptsAnyParams else { return [] }
        var out: [Diagnostic] = []
        for entry in params {
            let at = entry.location ?? fallback
            guard let schema = tool.param(entry.key) else {
                let known = tool.params.map(\.name)
                out.append(.error(
                    .invalidParam, "node '\(node.id)': tool \(tool.kind) has no param '\(entry.key)'", at: at,
                    hint: Suggest.hint(for: entry.key, in: known)
                        ?? (known.isEmpty ? "\(tool.kind) takes no params" : "its params are: " + known.joined(separator: ", "))))
                continue
            }
            if let problem = problem(with: entry.value, schema: schema) {
                out.append(.error(.invalidParam, "node '\(node.id)': param '\(entry.key)' \(problem.message)",
                                  at: at, hint: problem.hint))
            }
        }
        for schema in tool.params where schema.required && schema.defaultValue == nil {
            if params[key: schema.name] == nil {
                out.append(.error(.invalidParam, "node '\(node.id)': param '\(schema.name)' is required by \(tool.kind)",
                                  at: node.paramsLocation ?? fallback,
                                  hint: "add `\(schema.name): <\(schema.type.rawValue)>` under the node's params"))
            }
        }
        return out
    }

    public struct Problem: Equatable, Sendable {
        public var message: String
        public var hint: String?
    }

    /// What is wrong with one value, or `nil` when it fits the schema.
    public static func problem(with value: ParamValue, schema: ParamSchema) -> Problem? {
        if value == .null {
            return schema.required && schema.defaultValue == nil
                ? Problem(message: "is required and cannot be null", hint: nil) : nil
        }
        switch (schema.type, value) {
        case (.any, _), (.number, .int), (.number, .double), (.integer, .int), (.string, .string),
             (.path, .string), (.boolean, .bool), (.array, .array), (.object, .object):
            break
        case (.integer, .double(let d)) where d == d.rounded() && abs(d) < 9e15:
            break
        default:
            return Problem(message: "must be \(article(schema.type)), not \(article(value.typeName)) (\(value.plainText))",
                           hint: schema.defaultValue.map { "the default is \($0.plainText)" })
        }
        if let number = value.numberValue {
            if let min = schema.min, number < min {
                return Problem(message: "is \(value.plainText), below the minimum \(ParamValue.plainNumber(min))", hint: nil)
            }
            if let max = schema.max, number > max {
                return Problem(message: "is \(value.plainText), above the maximum \(ParamValue.plainNumber(max))", hint: nil)
            }
        }
        if let allowed = schema.allowed, !allowed.contains(where: { same($0, value) }) {
            let names = allowed.map(\.plainText)
            return Problem(message: "is '\(value.plainText)', not one of: \(names.joined(separator: ", "))",
                           hint: Suggest.hint(for: value.plainText, in: names))
        }
        return nil
    }

    private static func same(_ a: ParamValue, _ b: ParamValue) -> Bool {
        if let x = a.numberValue, let y = b.numberValue { return x == y }
        return a == b
    }

    private static func article(_ type: ParamType) -> String { article(type.rawValue) }
    private static func article(_ name: String) -> String {
        (name.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + name
    }
}
