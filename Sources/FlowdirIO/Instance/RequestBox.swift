import FlowdirCore
import FlowdirTemplates

/// A person's request to whichever flowdir holds an instance (DESIGN.md §8:
/// commands never race the writer). It is dropped as a file into
/// `.flowdir/requests/`; the holder carries it out and leaves a result.
public struct PersonRequest: Sendable, Equatable {
    public enum Verb: String, Sendable, CaseIterable {
        case snooze, claim, release, skip, answer, retry, rerun, cancel
        /// `flowdir polling pause|resume`: about the instance, not a node.
        case pausePolling, resumePolling

        public var isAboutInstance: Bool { self == .pausePolling || self == .resumePolling }
    }

    public var id: String
    public var verb: Verb
    public var node: String
    /// Who asks: their git identity, else user@host.
    public var by: String
    public var duration: Double?
    public var choice: ParamValue?
    public var approve: Bool?
    public var params: [ParamEntry]
    /// Inbox files `flowdir answer` placed for this request.
    public var files: [String]
    /// Answer even though someone else holds the claim.
    public var force: Bool
    /// A rerun of everything downstream too.
    public var downstream: Bool = false

    public init(id: String = RandomID.uuid(), verb: Verb, node: String, by: String, duration: Double? = nil,
                choice: ParamValue? = nil, approve: Bool? = nil, params: [ParamEntry] = [], files: [String] = [],
                force: Bool = false) {
        self.id = id
        self.verb = verb
        self.node = node
        self.by = by
        self.duration = duration
        self.choice = choice
        self.approve = approve
        self.params = params
        self.files = files
        self.force = force
    }
}

/// What came of a request, for the person who made it.
public struct RequestResult: Sendable, Equatable {
    public var ok: Bool
    public var message: String

    public init(ok: Bool, message: String) {
        self.ok = ok
        self.message = message
    }
}

public enum RequestBox {
    static func directory(_ instance: String) -> String { Path.join(instance, InstancePaths.local + "/requests") }

    public static func post(_ r: PersonRequest, to instance: String) throws(FileSystemError) {
        var e = [ParamEntry(key: "verb", value: .string(r.verb.rawValue)), ParamEntry(key: "node", value: .string(r.node)),
                 ParamEntry(key: "by", value: .string(r.by))]
        if let d = r.duration { e.append(ParamEntry(key: "duration", value: .double(d))) }
        if let c = r.choice { e.append(ParamEntry(key: "choice", value: c)) }
        if let a = r.approve { e.append(ParamEntry(key: "approve", value: .bool(a))) }
        if !r.params.isEmpty { e.append(ParamEntry(key: "params", value: .object(r.params))) }
        if !r.files.isEmpty { e.append(ParamEntry(key: "files", value: .array(r.files.map(ParamValue.string)))) }
        if r.force { e.append(ParamEntry(key: "force", value: .bool(true))) }
        if r.downstream { e.append(ParamEntry(key: "downstream", value: .bool(true))) }
        try Files.writeAtomically(Path.join(directory(instance), r.id + ".request.yaml"), YAMLWriter.document(e))
    }

    /// Requests waiting, oldest first; unreadable ones are answered as such.
    public static func pending(_ instance: String) -> [PersonRequest] {
        let dir = directory(instance)
        let names = ((try? LocalFileSystem().listDirectory(dir)) ?? []).filter { $0.hasSuffix(".request.yaml") }.sorted()
        return names.compactMap { name in
            let id = String(name.dropLast(".request.yaml".count))
            let file = Path.join(dir, name)
            guard let bytes = try? LocalFileSystem().readFile(file, limit: 1 << 20),
                  case .success(let doc) = InstanceCodec.document(bytes, file: file),
                  let verb = doc[key: "verb"]?.value.stringValue.flatMap(PersonRequest.Verb.init(rawValue:)),
                  let node = doc[key: "node"]?.value.stringValue else {
                finish(id, in: instance, RequestResult(ok: false, message: "the request file could not be read"))
                return nil
            }
            var r = PersonRequest(id: id, verb: verb, node: node, by: doc[key: "by"]?.value.stringValue ?? Host.user)
            r.duration = doc[key: "duration"]?.value.numberValue
            r.choice = doc[key: "choice"]?.value
            if case .bool(let b)? = doc[key: "approve"]?.value { r.approve = b }
            if case .object(let p)? = doc[key: "params"]?.value { r.params = p }
            if case .array(let f)? = doc[key: "files"]?.value { r.files = f.compactMap(\.stringValue) }
            if case .bool(let b)? = doc[key: "force"]?.value { r.force = b }
            if case .bool(let b)? = doc[key: "downstream"]?.value { r.downstream = b }
            return r
        }
    }

    /// Records the result and removes the request.
    public static func finish(_ id: String, in instance: String, _ result: RequestResult) {
        let dir = directory(instance)
        _ = try? Files.writeAtomically(Path.join(dir, id + ".result"), (result.ok ? "ok\n" : "refused\n") + result.message + "\n")
        try? Files.remove(Path.join(dir, id + ".request.yaml"))
    }

    /// The result, once there is one (and then it is removed).
    public static func takeResult(_ id: String, in instance: String) -> RequestResult? {
        let file = Path.join(directory(instance), id + ".result")
        guard let bytes = try? LocalFileSystem().readFile(file, limit: 1 << 20) else { return nil }
        try? Files.remove(file)
        let text = String(decoding: bytes, as: UTF8.self)
        let first = text.prefix { $0 != "\n" }
        return RequestResult(ok: first == "ok", message: String(text.dropFirst(first.count + 1)).trimmed())
    }

    /// Drops a request never carried out (its requester gave up waiting).
    public static func withdraw(_ id: String, in instance: String) {
        try? Files.remove(Path.join(directory(instance), id + ".request.yaml"))
    }
}
