import FlowdirCore
import FlowdirTemplates

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

    /// The request file's text (`PersonRequest.fileText`).
    public static func encode(_ r: PersonRequest) -> String { r.fileText }

    /// A request file's bytes as a request, or why they are not one
    /// (`PersonRequest.decode`, asked by this machine's user when the file
    /// does not say).
    public static func decode(_ bytes: [UInt8], id: String) -> Result<PersonRequest, Unreadable> {
        PersonRequest.decode(bytes, id: id, file: id + ".request.yaml", defaultBy: Host.user)
    }

    public typealias Unreadable = PersonRequest.Unreadable

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
