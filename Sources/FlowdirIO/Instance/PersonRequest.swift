import FlowdirCore
import FlowdirTemplates

/// A person's request to whichever flowdir holds an instance (commands
/// never race the writer: docs/instance-folder.md). It is dropped as a file into
/// `.flowdir/requests/`; the holder carries it out and leaves a result.
public struct PersonRequest: Sendable, Equatable {
    public enum Verb: String, Sendable, CaseIterable {
        case snooze, claim, release, skip, answer, retry, rerun, cancel
        /// `flowdir polling pause|resume`: about the instance, not a node.
        case pausePolling, resumePolling

        public var isAboutInstance: Bool { self == .pausePolling || self == .resumePolling }

        /// A retry or rerun: carried out only by a flowdir that starts jobs
        /// (a run, the watcher). A retry's frozen inputs live in that
        /// engine's memory until its job starts; one that only settles
        /// would lose them on closing.
        public var startsAJob: Bool { self == .retry || self == .rerun }
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
    /// A retry from this run's frozen inputs and params (default: the last run that started).
    public var run: Int?

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
        if let run { e.append(ParamEntry(key: "run", value: .int(run))) }
        return YAMLWriter.document(e)
    }

    /// A request file's bytes as a request, or why they are not one. Pure
    /// (so it can be fuzzed: `Fuzz/Targets/request.swift`): every value is
    /// checked here, before anything acts on it.
    /// - Parameter defaultBy: who asks, when the file does not say.
    public static func decode(_ bytes: [UInt8], id: String, file: String, defaultBy: String) -> Result<PersonRequest, Unreadable> {
        let doc: [ParamEntry]
        switch InstanceCodec.document(bytes, file: file) {
        case .failure(let d): return .failure(Unreadable("it is not a YAML mapping: \(d.message)"))
        case .success(let d): doc = d
        }
        guard let verbText = doc[key: "verb"]?.value.stringValue else { return .failure(Unreadable("it has no `verb`")) }
        guard let verb = Verb(rawValue: verbText) else {
            return .failure(Unreadable("`verb: \(Unreadable.shown(verbText))` is not a request flowdir knows"))
        }
        guard let node = doc[key: "node"]?.value.stringValue else { return .failure(Unreadable("it has no `node`")) }
        guard node.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            return .failure(Unreadable("its `node` has control characters"))
        }
        var r = PersonRequest(id: id, verb: verb, node: node, by: doc[key: "by"]?.value.stringValue ?? defaultBy)
        if let d = doc[key: "duration"]?.value, d != .null {
            guard let n = d.numberValue else { return .failure(Unreadable("`duration` is not a number of seconds")) }
            guard n > 0, FlowDuration.checkedSeconds(n) != nil else {
                return .failure(Unreadable("`duration: \(ParamValue.plainNumber(n))` is not a number of seconds above 0 and at most 100 years"))
            }
            r.duration = n
        }
        r.choice = doc[key: "choice"]?.value
        if case .bool(let b)? = doc[key: "approve"]?.value { r.approve = b }
        if case .object(let p)? = doc[key: "params"]?.value { r.params = p }
        if case .array(let f)? = doc[key: "files"]?.value {
            r.files = f.compactMap(\.stringValue)
            // Names in inbox/, nothing else (`flowdir answer` places them there).
            if let bad = r.files.first(where: { !InboxName.isPlainName($0) }) {
                return .failure(Unreadable("`files` names '\(Unreadable.shown(bad))', which is not a file name in inbox/"))
            }
        }
        if case .bool(let b)? = doc[key: "force"]?.value { r.force = b }
        if case .bool(let b)? = doc[key: "downstream"]?.value { r.downstream = b }
        if let v = doc[key: "run"]?.value, v != .null {
            guard case .int(let n) = v, n >= 1, RunRecord.runNumbers.contains(n) else {
                return .failure(Unreadable("`run` is not a run number (1 or more)"))
            }
            r.run = n
        }
        return .success(r)
    }

    /// Why a request file cannot be handled.
    public struct Unreadable: Error, Equatable, Sendable, CustomStringConvertible {
        public var reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { reason }

        static func shown(_ t: String) -> String {
            let cut = t.count > 60 ? String(t.prefix(60)) + "…" : t
            return String(cut.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        }
    }
}
