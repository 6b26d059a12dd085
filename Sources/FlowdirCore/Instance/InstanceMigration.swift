/// Migrates an instance's files from an older `schemaVersion` to the
/// current one, on the documents as read (key order kept). Pure: the store
/// reads the files, calls this, and commits what changed.
public enum InstanceMigration {
    public struct Documents: Hashable, Sendable {
        public var instance: [ParamEntry]
        /// node id → its state.yaml
        public var states: [String: [ParamEntry]]

        public init(instance: [ParamEntry], states: [String: [ParamEntry]]) {
            self.instance = instance
            self.states = states
        }
    }

    public enum Outcome: Hashable, Sendable {
        case current
        case migrated(from: Int, Documents)
        /// Written by a newer flowdir: refuse rather than guess.
        case tooNew(Int)
    }

    /// The version the documents declare; no `schemaVersion` means 0.
    public static func version(of instance: [ParamEntry]) -> Int {
        if case .int(let v)? = instance[key: "schemaVersion"]?.value { return v }
        return 0
    }

    public static func migrate(_ docs: Documents) -> Outcome {
        let from = version(of: docs.instance)
        if from == InstanceRecord.currentSchemaVersion { return .current }
        if from > InstanceRecord.currentSchemaVersion { return .tooNew(from) }
        var d = docs
        for step in max(0, from)..<InstanceRecord.currentSchemaVersion {
            d = steps[step](d)
        }
        return .migrated(from: from, d)
    }

    /// `steps[n]` takes version n to n + 1.
    static let steps: [@Sendable (Documents) -> Documents] = [v0ToV1]

    /// Version 0, the pre-release layout: `uuid`, `name`, `created` and
    /// `paused: bool` in instance.yaml; `message` and `attempt` in
    /// state.yaml, whose states were `queued`, `running`, `waiting`, `done`
    /// and `error`.
    static func v0ToV1(_ d: Documents) -> Documents {
        var instance = renamed(d.instance, ["uuid": "id", "name": "title", "created": "createdAt"])
        if let i = instance.firstIndex(where: { $0.key == "paused" }) {
            let paused = instance[i].value == .bool(true)
            instance[i] = ParamEntry(key: "polling", value: .string(paused ? "paused" : "active"))
        }
        set(&instance, "archived", .bool(false), onlyIfMissing: true)
        set(&instance, "polling", .string("active"), onlyIfMissing: true)
        set(&instance, "schemaVersion", .int(1), onlyIfMissing: false)
        let stateNames = ["queued": "queuedRemote", "running": "runningLocal", "waiting": "awaitingUser",
                          "done": "succeeded", "error": "failed"]
        var states: [String: [ParamEntry]] = [:]
        for (node, doc) in d.states {
            var s = renamed(doc, ["message": "reason", "attempt": "run"])
            if let i = s.firstIndex(where: { $0.key == "state" }), case .string(let old) = s[i].value, let new = stateNames[old] {
                s[i].value = .string(new)
            }
            states[node] = s
        }
        return Documents(instance: instance, states: states)
    }

    private static func renamed(_ doc: [ParamEntry], _ names: [String: String]) -> [ParamEntry] {
        doc.map { e in names[e.key].map { ParamEntry(key: $0, value: e.value, location: e.location) } ?? e }
    }

    private static func set(_ doc: inout [ParamEntry], _ key: String, _ value: ParamValue, onlyIfMissing: Bool) {
        if let i = doc.firstIndex(where: { $0.key == key }) {
            if !onlyIfMissing { doc[i].value = value }
        } else {
            doc.append(ParamEntry(key: key, value: value))
        }
    }
}
