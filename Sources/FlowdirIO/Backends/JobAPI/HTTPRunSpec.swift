import FlowdirCore

/// A tool's `run.http` (docs/templates-and-tools.md) made into one run's prediction:
/// placeholders in `input` filled in, a placeholder alone keeping its JSON
/// type (`"{params.steps}"` stays a number, `"{inputs.image}"` is the file).
public enum HTTPRunSpec {
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public static func work(_ entries: [ParamEntry], tool: String, inputs: [String: String], params: [String: String],
                            typedParams: [ParamEntry]) throws(Invalid) -> HTTPWork {
        guard let endpoint = entries[key: "endpoint"]?.value.stringValue, !endpoint.isEmpty else {
            throw Invalid(description: "tool \(tool): run.http needs `endpoint:` (a name under `endpoints:` in the config)")
        }
        let model = entries[key: "model"]?.value.stringValue
        let version = entries[key: "version"]?.value.stringValue
        guard (model == nil) != (version == nil) else {
            throw Invalid(description: "tool \(tool): run.http needs exactly one of `model: owner/name` or `version: <id>`")
        }
        var input: [(key: String, value: HTTPInputValue)] = []
        if case .object(let fields)? = entries[key: "input"]?.value {
            for field in fields {
                input.append((field.key, try value(field.value, tool: tool, inputs: inputs, params: params, typed: typedParams)))
            }
        }
        var outputs: [String: String] = [:]
        if case .object(let mapping)? = entries[key: "outputs"]?.value {
            for m in mapping { outputs[m.key] = m.value.stringValue ?? "output" }
        }
        return HTTPWork(endpoint: endpoint, model: model, version: version, input: input, outputs: outputs)
    }

    static func value(_ v: ParamValue, tool: String, inputs: [String: String], params: [String: String],
                      typed: [ParamEntry]) throws(Invalid) -> HTTPInputValue {
        switch v {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .integer(i)
        case .double(let d): return .number(d)
        case .array(let items):
            var out: [HTTPInputValue] = []
            for item in items { out.append(try value(item, tool: tool, inputs: inputs, params: params, typed: typed)) }
            return .array(out)
        case .object(let fields):
            var out: [String: HTTPInputValue] = [:]
            for f in fields { out[f.key] = try value(f.value, tool: tool, inputs: inputs, params: params, typed: typed) }
            return .object(out)
        case .string(let text):
            let template: CommandTemplate
            do { template = try CommandTemplate(parsing: [text]) } catch {
                throw Invalid(description: "tool \(tool): run.http input: \(error.message)")
            }
            let pieces = template.arguments[0]
            if pieces.count == 1 {
                switch pieces[0] {
                case .input(let port):
                    guard let path = inputs[port] else { return .null }  // an absent optional input
                    return .file(path: path)
                case .param(let key):
                    if let given = typed[key: key]?.value { return typedValue(given) }
                    guard let text = params[key] else { return .null }
                    return inferred(text)
                default: break
                }
            }
            return .string(template.expand(inputs: inputs, outputs: [:], params: params, runDir: "", toolDir: "")[0])
        }
    }

    static func typedValue(_ v: ParamValue) -> HTTPInputValue {
        switch v {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .integer(i)
        case .double(let d): .number(d)
        case .string(let s): .string(s)
        case .array(let a): .array(a.map(typedValue))
        case .object(let o): .object(Dictionary(o.map { ($0.key, typedValue($0.value)) }, uniquingKeysWith: { a, _ in a }))
        }
    }

    /// A default given as text (from the tool's schema): a number or a boolean when it reads as one.
    static func inferred(_ text: String) -> HTTPInputValue {
        if let i = Int(text) { return .integer(i) }
        if let d = Double(text), d.isFinite { return .number(d) }
        if text == "true" { return .bool(true) }
        if text == "false" { return .bool(false) }
        return .string(text)
    }
}

/// Where a port's file is in a prediction's `output` (`run.http.outputs`):
/// `output`, `output[0]`, `output.image`, `output.images[1]`.
public enum OutputPath {
    public enum Step: Sendable, Equatable {
        case key(String)
        case index(Int)
    }

    /// The steps after `output`; nil when `path` is not such a path.
    public static func parse(_ path: String) -> [Step]? {
        var rest = Substring(path)
        guard rest.hasPrefix("output") else { return nil }
        rest = rest.dropFirst(6)
        var steps: [Step] = []
        while let first = rest.first {
            if first == "." {
                rest = rest.dropFirst()
                let name = rest.prefix { $0 != "." && $0 != "[" }
                guard !name.isEmpty else { return nil }
                steps.append(.key(String(name)))
                rest = rest.dropFirst(name.count)
            } else if first == "[" {
                guard let close = rest.firstIndex(of: "]"), let i = Int(rest[rest.index(after: rest.startIndex)..<close]), i >= 0 else { return nil }
                steps.append(.index(i))
                rest = rest[rest.index(after: close)...]
            } else {
                return nil
            }
        }
        return steps
    }
}
