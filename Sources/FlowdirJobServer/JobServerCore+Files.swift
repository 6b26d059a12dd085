import FlowdirCore
import FlowdirIO

/// Files (uploads and outputs), what is kept and for how long, and the stats.
extension JobServerCore {
    var stats: JSONValue {
        get async {
            var models: [String: JSONValue] = [:]
            for name in modelNames {
                if let s = await backends[name]?.status() { models[name] = s }
            }
            var out: [String: JSONValue] = ["created": .number(Double(store.made)), "active": .number(Double(active.count)),
                                            "kept": .number(Double(store.count)), "waiting": .number(Double(waiters.count))]
            if !models.isEmpty { out["models"] = .object(models) }
            return .object(out)
        }
    }

    /// Removes what is past its time (docs/jobserver.md, "Kept as files"):
    /// files past `--file-lifetime`, unfinished uploads, and ended
    /// predictions past `--keep` or beyond `--max-predictions`, with their files.
    func sweep() {
        let now = seconds()
        files.sweep(now: now)
        let gone = store.expired(now: now, keep: config.keepPredictions, max: config.maxPredictions) { active.contains($0) }
        for id in gone {
            for file in store.remove(id) { files.remove(file) }
        }
        if !gone.isEmpty { logger.info("removed \(gone.count) ended prediction(s) past their time", metadata: ["kept": .stringConvertible(store.count)]) }
    }

    func addFile(_ bytes: [UInt8], name: String, type: String, for prediction: String) throws -> FileStore.Stored {
        let f = try files.add(bytes, name: name, contentType: type, now: seconds())
        store.attach(f.id, to: prediction)
        return f
    }

    func url(of f: FileStore.Stored) -> String { "\(publicBase)/v1/files/\(f.id)/\(f.name)" }

    /// An upload received whole (`FileStore.Incoming`), as Replicate's file object.
    func upload(_ incoming: FileStore.Incoming, name: String, type: String) throws -> JSONValue {
        fileObject(try files.commit(incoming, name: name, contentType: type, now: seconds()))
    }

    /// Replicate's file object.
    func fileObject(_ f: FileStore.Stored) -> JSONValue {
        let at = publicBase
        return .object([
            "id": .string(f.id), "name": .string(f.name), "content_type": .string(f.contentType), "size": .number(Double(f.size)),
            "etag": .string(f.sha256), "checksums": .object(["sha256": .string(f.sha256)]), "metadata": .object([:]),
            "created_at": .string(Timestamp(seconds: f.created).iso8601),
            "expires_at": .string(Timestamp(seconds: f.created + config.fileLifetime).iso8601),
            "urls": .object(["get": .string("\(at)/v1/files/\(f.id)"), "download": .string(url(of: f))]),
        ])
    }

    /// A file still served, and where its bytes are.
    func file(_ id: String) -> (FileStore.Stored, path: String)? {
        guard let f = files.find(id, now: seconds()) else { return nil }
        return (f, files.path(of: f))
    }

    func fileList() -> JSONValue {
        .object(["results": .array(files.all(now: seconds()).map { fileObject($0) }), "next": .null, "previous": .null])
    }

    func deleteFile(_ id: String) -> Bool {
        guard files.find(id, now: seconds()) != nil else { return false }
        files.remove(id)
        return true
    }
}
