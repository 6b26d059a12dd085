/// `flowdir://<instance-id>/node/<node>?await=<await-id>`: a link to one
/// question, for notifications and hooks; `flowdir open` resolves it.
public struct AwaitLink: Hashable, Sendable {
    public static let scheme = "flowdir://"

    public var instanceID: String
    public var node: String
    public var awaitID: String?

    public init(instanceID: String, node: String, awaitID: String?) {
        self.instanceID = instanceID
        self.node = node
        self.awaitID = awaitID
    }

    public var text: String {
        Self.scheme + instanceID + "/node/" + node + (awaitID.map { "?await=" + $0 } ?? "")
    }

    public struct Malformed: Error, Hashable, Sendable, CustomStringConvertible {
        public var link: String
        public var reason: String
        public var description: String {
            "'\(link)' is not a flowdir link: \(reason); a link reads flowdir://<instance-id>/node/<node>?await=<id>"
        }
    }

    public static func isLink(_ text: String) -> Bool { text.hasPrefix(scheme) }

    public static func parse(_ text: String) -> Result<AwaitLink, Malformed> {
        func bad(_ reason: String) -> Result<AwaitLink, Malformed> { .failure(Malformed(link: text, reason: reason)) }
        guard text.hasPrefix(scheme) else { return bad("it does not start with \(scheme)") }
        var rest = Substring(text.dropFirst(scheme.count))
        var query: Substring?
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1] == "node" else { return bad("the path is not <instance-id>/node/<node>") }
        guard isToken(parts[0]) else { return bad("the instance id '\(parts[0])' is empty or has odd characters") }
        guard isToken(parts[2]) else { return bad("the node '\(parts[2])' is empty or has odd characters") }
        var awaitID: String?
        if let query, !query.isEmpty {
            for pair in query.split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard kv.count == 2, kv[0] == "await" else { return bad("unknown query '\(pair)'") }
                guard isToken(kv[1]) else { return bad("the await id '\(kv[1])' is empty or has odd characters") }
                awaitID = String(kv[1])
            }
        }
        return .success(AwaitLink(instanceID: String(parts[0]), node: String(parts[2]), awaitID: awaitID))
    }

    static func isToken(_ s: Substring) -> Bool {
        !s.isEmpty && s.count <= 128 && s.unicodeScalars.allSatisfy {
            ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "_"
        }
    }
}

/// What a name in `inbox/` is, before anything is read.
public enum InboxName: Hashable, Sendable {
    /// `<node>.await.yaml`: the question itself.
    case awaitFile(node: String)
    /// `<node>.<port>[.<ext>]`: an answer (or a misnamed one).
    case answer(node: String, port: String, ext: String)
    /// Ours, or a file still being written by an editor or a sync tool: left alone.
    case ignored
    /// Nothing flowdir expects: refused (kept as `.rejected`).
    case unexpected(prefix: String)

    /// A file a person dropped (an answer, or one flowdir will refuse).
    public var isDropped: Bool {
        switch self {
        case .answer, .unexpected: true
        case .awaitFile, .ignored: false
        }
    }

    /// A name flowdir takes in `inbox/`: one path component, no control
    /// characters (a line break in it would reach a commit message, a
    /// terminal, a notification), at most 255 bytes.
    public static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && name.utf8.count <= 255
            && name.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F && $0 != "/" }
    }

    public static func classify(_ name: String) -> InboxName {
        if name.isEmpty || name.hasPrefix(".") || name == "done" { return .ignored }
        // Refused (and set aside) whatever it looks like; its note is named without them.
        if !isPlainName(name) {
            let first = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let prefix = String(first.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "_" : Character($0) })
            return .unexpected(prefix: prefix.isEmpty ? "_" : prefix)
        }
        // Editors' and sync tools' work files: vim's 4913 and x~, *.swp,
        // downloads and copies in progress, and flowdir's own notes (a
        // refused answer, one that lost a sync merge).
        let busy = ["~", ".swp", ".swx", ".part", ".partial", ".tmp", ".crdownload", ".rejected", ".conflict", ".error.txt"]
        if name == "4913" || busy.contains(where: { name.hasSuffix($0) }) { return .ignored }
        if name.hasPrefix("sed") && name.count == 9 && !name.contains(".") { return .ignored }  // sed -i's temp file
        let parts = name.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, !parts[0].isEmpty, !parts[1].isEmpty else { return .unexpected(prefix: parts[0]) }
        if parts.count == 3, parts[1] == "await", parts[2] == "yaml" { return .awaitFile(node: parts[0]) }
        return .answer(node: parts[0], port: parts[1], ext: parts.count == 3 ? parts[2] : "")
    }
}

/// The checks an answer file passes before it is taken (docs/instance-folder.md, "inbox/"):
/// a regular file, not empty, within the size limit, and of the port's type.
public enum AnswerCheck {
    public enum Kind: Sendable, Equatable {
        case regular, directory, symlink, device, other
    }

    /// What `lstat` said about a file.
    public struct Facts: Sendable, Equatable {
        public var kind: Kind
        public var size: Int
        public init(kind: Kind, size: Int) {
            self.kind = kind
            self.size = size
        }
    }

    public static let defaultSizeLimit = 512 << 20

    /// The format found, or why the file is refused.
    public static func check(_ facts: Facts, content: () throws -> any ByteSource, as type: PortType,
                             sizeLimit: Int = defaultSizeLimit) -> Result<ContentFormat, ContentCheck.Failure> {
        switch facts.kind {
        case .regular: break
        case .directory: return .failure(.init("it is a directory; drop a single file"))
        case .symlink: return .failure(.init("it is a symbolic link; copy the file itself into inbox/"))
        case .device: return .failure(.init("it is a device, not a file"))
        case .other: return .failure(.init("it is not a regular file"))
        }
        if facts.size == 0 { return .failure(.init("it is empty")) }
        if facts.size > sizeLimit {
            return .failure(.init("it is \(ByteCount(facts.size)), more than the \(ByteCount(sizeLimit)) allowed (config: answerSizeLimit)"))
        }
        do {
            let source = try content()
            return .success(try ContentCheck.check(source, as: type))
        } catch let f as ContentCheck.Failure {
            return .failure(.init("it is not a valid \(type): \(f.reason)"))
        } catch {
            return .failure(.init("it cannot be read: \(error)"))
        }
    }

    /// A choice written into the await file (`choice:` or `answer:`).
    public static func choice(_ value: ParamValue, of a: AwaitRecord) -> Result<String, ContentCheck.Failure> {
        guard let text = value.stringValue ?? value.numberValue.map({ ParamValue.plainNumber($0) }), !text.isEmpty else {
            return .failure(.init("the choice must be a single word, one of: \(a.choices.joined(separator: ", "))"))
        }
        guard a.choices.isEmpty || a.choices.contains(text) else {
            return .failure(.init("'\(text)' is not one of the choices: \(a.choices.joined(separator: ", "))"))
        }
        return .success(text)
    }

    /// Edited params of a confirmation: each must be one the await offered,
    /// valid for the tool's schema when the tool has one, else of the same
    /// kind as the value offered.
    public static func params(_ edited: [ParamEntry], offered: [ParamEntry], schema: [ParamSchema])
        -> Result<[ParamEntry], ContentCheck.Failure>
    {
        var result = offered
        for e in edited {
            if let s = schema.first(where: { $0.name == e.key }) {
                if let problem = ParamValidator.problem(with: e.value, schema: s) {
                    return .failure(.init("param '\(e.key)' \(problem.message)"))
                }
            } else if let old = offered[key: e.key] {
                if !sameKind(old.value, e.value) {
                    return .failure(.init("param '\(e.key)' must be \(old.value.numberValue != nil ? "a number" : old.value.typeName), not \(e.value.typeName)"))
                }
            } else {
                let known = offered.map(\.key).joined(separator: ", ")
                return .failure(.init("there is no param '\(e.key)' to confirm (params: \(known))"))
            }
            if let i = result.firstIndex(where: { $0.key == e.key }) { result[i].value = e.value } else { result.append(e) }
        }
        return .success(result)
    }

    static func sameKind(_ a: ParamValue, _ b: ParamValue) -> Bool {
        if a.numberValue != nil { return b.numberValue != nil }
        switch (a, b) {
        case (.string, .string), (.bool, .bool), (.array, .array), (.object, .object), (.null, _): return true
        default: return false
        }
    }
}
