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

/// `.flowdir/requests/`: a request is `<id>.request.yaml`; the holder takes
/// it (renamed `<id>.taken.yaml`) while carrying it out, then leaves
/// `<id>.result`. A request that cannot be handled — unreadable, a value
/// out of range, or one a flowdir was carrying out when it stopped — is
/// set aside in `rejected/` with `<id>.why.txt` saying why, and its
/// requester gets that as a refusal: it is never tried again, so a bad
/// request cannot stop every later run, watch or serve of the instance.
public enum RequestBox {
    static func directory(_ instance: String) -> String { Path.join(instance, InstancePaths.local + "/requests") }

    /// Where requests that could not be handled are kept, with why.
    public static func rejectedDirectory(_ instance: String) -> String { Path.join(directory(instance), "rejected") }

    /// Rejected requests are kept this long (seconds), then removed.
    static let rejectedLifetime: Double = 7 * 86_400

    public static func post(_ r: PersonRequest, to instance: String) throws(FileSystemError) {
        try Files.writeAtomically(Path.join(directory(instance), r.id + ".request.yaml"), encode(r))
    }

    /// The request file's text.
    public static func encode(_ r: PersonRequest) -> String {
        var e = [ParamEntry(key: "verb", value: .string(r.verb.rawValue)), ParamEntry(key: "node", value: .string(r.node)),
                 ParamEntry(key: "by", value: .string(r.by))]
        if let d = r.duration { e.append(ParamEntry(key: "duration", value: .double(d))) }
        if let c = r.choice { e.append(ParamEntry(key: "choice", value: c)) }
        if let a = r.approve { e.append(ParamEntry(key: "approve", value: .bool(a))) }
        if !r.params.isEmpty { e.append(ParamEntry(key: "params", value: .object(r.params))) }
        if !r.files.isEmpty { e.append(ParamEntry(key: "files", value: .array(r.files.map(ParamValue.string)))) }
        if r.force { e.append(ParamEntry(key: "force", value: .bool(true))) }
        if r.downstream { e.append(ParamEntry(key: "downstream", value: .bool(true))) }
        return YAMLWriter.document(e)
    }

    /// A request file's bytes as a request, or why they are not one. Pure:
    /// every value is checked here, before anything acts on it.
    public static func decode(_ bytes: [UInt8], id: String) -> Result<PersonRequest, Unreadable> {
        let doc: [ParamEntry]
        switch InstanceCodec.document(bytes, file: id + ".request.yaml") {
        case .failure(let d): return .failure(Unreadable("it is not a YAML mapping: \(d.message)"))
        case .success(let d): doc = d
        }
        guard let verbText = doc[key: "verb"]?.value.stringValue else { return .failure(Unreadable("it has no `verb`")) }
        guard let verb = PersonRequest.Verb(rawValue: verbText) else {
            return .failure(Unreadable("`verb: \(Unreadable.shown(verbText))` is not a request flowdir knows"))
        }
        guard let node = doc[key: "node"]?.value.stringValue else { return .failure(Unreadable("it has no `node`")) }
        guard node.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            return .failure(Unreadable("its `node` has control characters"))
        }
        var r = PersonRequest(id: id, verb: verb, node: node, by: doc[key: "by"]?.value.stringValue ?? Host.user)
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

    /// Requests waiting, oldest first. What cannot be handled is set aside
    /// (see `reject`) and left out: an unreadable file, and one taken by a
    /// flowdir that stopped while carrying it out (a crash or a kill: it is
    /// not tried again, so it can never stop each flowdir that opens the
    /// instance after).
    public static func pending(_ instance: String) -> [PersonRequest] {
        let dir = directory(instance)
        let names = ((try? LocalFileSystem().listDirectory(dir)) ?? []).sorted()
        for name in names where name.hasSuffix(".taken.yaml") {
            let id = String(name.dropLast(".taken.yaml".count))
            reject(id, file: name, in: instance, why: "a flowdir stopped while carrying this request out (a crash or a kill); "
                   + "it is not tried again: ask again if it is still wanted")
        }
        return names.filter { $0.hasSuffix(".request.yaml") }.compactMap { name -> PersonRequest? in
            let id = String(name.dropLast(".request.yaml".count))
            let bytes: [UInt8]
            switch Result(catching: { () throws(FileSystemError) in try LocalFileSystem().readFileIfRegular(Path.join(dir, name), limit: 1 << 20) }) {
            case .success(let read?): bytes = read
            case .success(nil):
                guard Files.exists(Path.join(dir, name)) else { return nil }  // withdrawn meanwhile
                reject(id, file: name, in: instance, why: "the request is not a regular file")
                return nil
            case .failure(.notFound): return nil  // withdrawn meanwhile
            case .failure(let error):
                reject(id, file: name, in: instance, why: "the request file could not be read: \(error)")
                return nil
            }
            switch decode(bytes, id: id) {
            case .success(let r): return r
            case .failure(let why):
                reject(id, file: name, in: instance, why: "the request file cannot be handled: \(why)")
                return nil
            }
        }
    }

    /// Takes a request before carrying it out (renamed `<id>.taken.yaml`):
    /// should this flowdir stop meanwhile, the next one sets it aside
    /// instead of trying it again. `false`: it is gone (withdrawn).
    public static func take(_ id: String, in instance: String) -> Bool {
        let dir = directory(instance)
        return (try? Files.rename(Path.join(dir, id + ".request.yaml"), Path.join(dir, id + ".taken.yaml"))) != nil
    }

    /// Records the result and removes the request.
    public static func finish(_ id: String, in instance: String, _ result: RequestResult) {
        let dir = directory(instance)
        _ = try? Files.writeAtomically(Path.join(dir, id + ".result"), (result.ok ? "ok\n" : "refused\n") + result.message + "\n")
        try? Files.remove(Path.join(dir, id + ".request.yaml"))
        try? Files.remove(Path.join(dir, id + ".taken.yaml"))
    }

    /// Sets request `file` aside in `rejected/` with `<id>.why.txt`, and
    /// answers its requester with the refusal. Rejected requests older than
    /// a week are removed then.
    static func reject(_ id: String, file: String, in instance: String, why: String) {
        let dir = directory(instance), aside = rejectedDirectory(instance)
        try? Files.makeDirectories(aside)
        pruneRejected(aside)
        let kept = (try? Files.rename(Path.join(dir, file), Path.join(aside, id + ".request.yaml"))) != nil
        if !kept { try? Files.remove(Path.join(dir, file)) }  // never left to be read again
        _ = try? Files.writeAtomically(Path.join(aside, id + ".why.txt"), why + "\n")
        _ = try? Files.writeAtomically(Path.join(dir, id + ".result"),
                                       "refused\n\(why) (kept as \(InstancePaths.local)/requests/rejected/\(id).request.yaml)\n")
    }

    /// Removes what is older than `rejectedLifetime` in `rejected/`, and
    /// results nobody took (their requester gave up or was stopped).
    static func pruneRejected(_ aside: String) {
        let cutoff = SystemClock().now().seconds - rejectedLifetime
        for (name, st) in (try? LocalFileSystem().listDirectoryWithStatus(aside)) ?? [] where st.st_mtim.seconds < cutoff {
            try? Files.remove(Path.join(aside, name))
        }
        let dir = Path.directory(of: aside)
        for (name, st) in (try? LocalFileSystem().listDirectoryWithStatus(dir)) ?? []
        where name.hasSuffix(".result") && st.st_mtim.seconds < cutoff {
            try? Files.remove(Path.join(dir, name))
        }
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
