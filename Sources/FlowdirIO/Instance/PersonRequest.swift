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

extension PersonRequest {
    /// The file `RequestBox.post` drops: `.flowdir/requests/<id>.request.yaml`.
    public var fileText: String {
        var e = [ParamEntry(key: "verb", value: .string(verb.rawValue)), ParamEntry(key: "node", value: .string(node)),
                 ParamEntry(key: "by", value: .string(by))]
        if let d = duration { e.append(ParamEntry(key: "duration", value: .double(d))) }
        if let c = choice { e.append(ParamEntry(key: "choice", value: c)) }
        if let a = approve { e.append(ParamEntry(key: "approve", value: .bool(a))) }
        if !params.isEmpty { e.append(ParamEntry(key: "params", value: .object(params))) }
        if !files.isEmpty { e.append(ParamEntry(key: "files", value: .array(files.map(ParamValue.string)))) }
        if force { e.append(ParamEntry(key: "force", value: .bool(true))) }
        if downstream { e.append(ParamEntry(key: "downstream", value: .bool(true))) }
        return YAMLWriter.document(e)
    }

    /// A request file's bytes as a request; nil when they are not one (not
    /// a YAML mapping, no `verb` flowdir knows, no `node`). A pure function
    /// of the bytes, so that it can be fuzzed (`Fuzz/Targets/request.swift`).
    /// - Parameter defaultBy: who asks, when the file does not say.
    public static func decode(_ bytes: [UInt8], id: String, file: String, defaultBy: String) -> PersonRequest? {
        guard case .success(let doc) = InstanceCodec.document(bytes, file: file),
              let verb = doc[key: "verb"]?.value.stringValue.flatMap(Verb.init(rawValue:)),
              let node = doc[key: "node"]?.value.stringValue else { return nil }
        var r = PersonRequest(id: id, verb: verb, node: node, by: doc[key: "by"]?.value.stringValue ?? defaultBy)
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
