import FlowdirCore
import Yams

/// YAML text → `MarkedValue`, through Yams (libyaml). Guards what libyaml
/// does not: nesting deep enough to exhaust the stack, and aliases that
/// expand to billions of nodes.
enum YAMLReader {
    static let maxDepth = 100

    static func parse(_ text: String, file: String) throws(DocumentError) -> MarkedValue? {
        if let deep = DepthScanner.firstTooDeep(text, limit: maxDepth) {
            throw DocumentError("nesting is deeper than \(maxDepth) levels", line: deep, column: 1)
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw DocumentError(error)
        } catch {
            throw DocumentError("\(error)", line: 1, column: 1)
        }
        guard let root else { return nil }
        // A document can't need many more nodes than it has bytes unless
        // aliases multiply them; cap that ("billion laughs").
        var converter = Converter(file: file, budget: 50_000 + 4 * text.utf8.count)
        return try converter.convert(root, depth: 0)
    }

    struct Converter {
        let file: String
        var budget: Int

        mutating func convert(_ node: Node, depth: Int) throws(DocumentError) -> MarkedValue {
            budget -= 1
            let (line, column) = node.mark.map { ($0.line, $0.column) } ?? (1, 1)
            let at = SourceLocation(file: file, line: line, column: column)
            guard budget >= 0 else {
                throw DocumentError("the document expands to too many values (aliases that refer to aliases?)",
                                    line: line, column: column,
                                    hint: "flowdir limits how far YAML aliases (*name) may multiply a document")
            }
            guard depth <= YAMLReader.maxDepth else {
                throw DocumentError("nesting is deeper than \(YAMLReader.maxDepth) levels", line: line, column: column)
            }
            switch node {
            case .scalar(let scalar):
                return MarkedValue(Self.resolve(scalar), at: at)
            case .alias(let alias):
                throw DocumentError("unresolved alias \(alias)", line: line, column: column)
            case .sequence(let seq):
                var items: [MarkedValue] = []
                items.reserveCapacity(seq.count)
                for item in seq { items.append(try convert(item, depth: depth + 1)) }
                return MarkedValue(.sequence(items), at: at)
            case .mapping(let map):
                var entries: [MarkedValue.Entry] = []
                var merges: [MarkedValue] = []
                for (key, value) in map {
                    guard case .scalar(let k) = key else {
                        throw DocumentError("a mapping key must be a plain name, not \(key.mapping != nil ? "a mapping" : "a list")",
                                            line: key.mark?.line ?? line, column: key.mark?.column ?? column)
                    }
                    let converted = try convert(value, depth: depth + 1)
                    if k.string == "<<", k.style == .plain {
                        merges.append(converted)  // YAML merge key: `<<: *defaults`
                        continue
                    }
                    entries.append(.init(key: k.string, keyLocation: SourceLocation(file: file, line: k.mark?.line ?? line, column: k.mark?.column ?? column),
                                         value: converted))
                }
                for merge in merges {
                    let sources = merge.items ?? [merge]
                    for source in sources {
                        guard let more = source.entries else {
                            throw DocumentError("`<<` merges a mapping, not \(source.kindName)",
                                                line: source.location.line, column: source.location.column)
                        }
                        for e in more where !entries.contains(where: { $0.key == e.key }) { entries.append(e) }
                    }
                }
                return MarkedValue(.mapping(entries), at: at)
            }
        }

        /// YAML 1.2 core schema for plain scalars, so `no` and `on` stay strings.
        static func resolve(_ scalar: Node.Scalar) -> MarkedValue.Kind {
            let s = scalar.string
            guard scalar.style == .plain else { return .string(s) }
            switch s {
            case "", "~", "null", "Null", "NULL": return .null
            case "true", "True", "TRUE": return .bool(true)
            case "false", "False", "FALSE": return .bool(false)
            case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .double(.infinity)
            case "-.inf", "-.Inf", "-.INF": return .double(-.infinity)
            case ".nan", ".NaN", ".NAN": return .double(.nan)
            default: break
            }
            guard let first = s.utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+")
                    || first == UInt8(ascii: ".") || (first >= 0x30 && first <= 0x39) else { return .string(s) }
            if s.hasPrefix("0x"), let i = Int(s.dropFirst(2), radix: 16) { return .int(i) }
            if s.hasPrefix("0o"), let i = Int(s.dropFirst(2), radix: 8) { return .int(i) }
            if isDecimalInteger(s), let i = Int(s) { return .int(i) }
            if isFloat(s), let d = Double(s) { return .double(d) }
            return .string(s)
        }

        static func isDecimalInteger(_ s: String) -> Bool {
            var u = Substring(s).utf8[...]
            if u.first == UInt8(ascii: "-") || u.first == UInt8(ascii: "+") { u = u.dropFirst() }
            return !u.isEmpty && u.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        }

        static func isFloat(_ s: String) -> Bool {
            // [-+]? ( \.[0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
            let allowed = Set("0123456789+-.eE".utf8)
            return s.utf8.allSatisfy(allowed.contains) && s.utf8.contains { $0 >= 0x30 && $0 <= 0x39 }
        }
    }
}

/// A cheap, conservative look at how deeply a YAML text nests, run before
/// libyaml so a hostile file is refused before it can exhaust the stack.
enum DepthScanner {
    /// The first line where the estimated depth passes `limit`, if any.
    static func firstTooDeep(_ text: String, limit: Int) -> Int? {
        var indents: [Int] = []
        var flow = 0
        var lineNumber = 0
        for line in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            var i = line.startIndex
            var indent = 0
            while i < line.endIndex, line[i] == UInt8(ascii: " ") { indent += 1; i = line.index(after: i) }
            if i == line.endIndex || line[i] == UInt8(ascii: "#") || line[i] == UInt8(ascii: "\r") { continue }
            if flow == 0 {
                while let last = indents.last, last >= indent { indents.removeLast() }
                indents.append(indent)
            }
            var dashes = 0
            var quote: UInt8? = nil
            var previous: UInt8 = UInt8(ascii: " ")
            while i < line.endIndex {
                let c = line[i]
                if let q = quote {
                    if c == UInt8(ascii: "\\"), q == UInt8(ascii: "\"") { i = line.index(after: i) } else if c == q { quote = nil }
                } else {
                    let atTokenStart = previous == UInt8(ascii: " ") || previous == UInt8(ascii: "[")
                        || previous == UInt8(ascii: "{") || previous == UInt8(ascii: ",") || previous == UInt8(ascii: ":")
                    switch c {
                    case UInt8(ascii: "\"") where atTokenStart: quote = c
                    case UInt8(ascii: "'") where atTokenStart: quote = c
                    case UInt8(ascii: "#") where previous == UInt8(ascii: " "): i = line.endIndex; continue
                    case UInt8(ascii: "["), UInt8(ascii: "{"): flow += 1
                    case UInt8(ascii: "]"), UInt8(ascii: "}"): flow = max(0, flow - 1)
                    case UInt8(ascii: "-") where atTokenStart && flow == 0: dashes += 1
                    default: break
                    }
                }
                previous = c
                if i < line.endIndex { i = line.index(after: i) }
                if indents.count + dashes + flow > limit { return lineNumber }
            }
        }
        return nil
    }
}
