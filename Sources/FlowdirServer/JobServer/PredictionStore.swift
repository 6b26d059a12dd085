#if canImport(Glibc)
import Glibc
#endif
import Crypto
import FlowdirCore
import FlowdirIO

/// The job server's predictions, kept as files under `--dir` so that a
/// restarted server still answers for them (DESIGN.md §12):
/// `DIR/predictions/<id>.json` is `{"seq": N, "prediction": {…}}`, written
/// whole to a temporary name and renamed over the old one, so a crash
/// leaves the old version or the new one, never half of one. `seq` keeps
/// the order they were made in, for the newest-first list.
struct PredictionStore {
    let dir: String
    /// Oldest first.
    private(set) var order: [String] = []
    private(set) var predictions: [String: [String: JSONValue]] = [:]
    private var seq: [String: Int] = [:]
    /// `seq` of `order`'s ids, in the same places (ascending).
    private var seqs: [Int] = []
    private var lastSeq = 0

    init(dir: String) throws {
        self.dir = dir
        try Files.makeDirectories(dir + "/predictions")
        var loaded: [(Int, String, [String: JSONValue])] = []
        for name in try LocalFileSystem().listDirectory(dir + "/predictions") where name.hasSuffix(".json") {
            // One unreadable file (a disk error, a hand edit) costs that prediction, not the server.
            guard let bytes = try? LocalFileSystem().readFile(dir + "/predictions/" + name, limit: 256 << 20),
                  let json = JSONValue.parse(bytes), case .number(let n)? = json["seq"],
                  case .object(let p)? = json["prediction"], let id = p["id"]?.stringValue else { continue }
            loaded.append((Int(n), id, p))
        }
        for (n, id, p) in loaded.sorted(by: { $0.0 < $1.0 }) {
            order.append(id)
            seqs.append(n)
            seq[id] = n
            predictions[id] = p
        }
        lastSeq = loaded.map(\.0).max() ?? 0
    }

    /// Predictions this folder holds: all it has made, as none are deleted.
    var count: Int { order.count }

    mutating func add(_ p: [String: JSONValue]) throws {
        let id = p["id"]!.stringValue!
        lastSeq += 1
        order.append(id)
        seqs.append(lastSeq)
        seq[id] = lastSeq
        predictions[id] = p
        try save(id)
    }

    /// Changes a prediction; saved unless `persist` is false (logs, which
    /// change often and are saved with the next change that matters).
    mutating func update(_ id: String, persist: Bool = true, _ change: (inout [String: JSONValue]) -> Void) {
        guard predictions[id] != nil else { return }
        change(&predictions[id]!)
        if persist { try? save(id) }
    }

    /// A page of ids, newest first: the newest `size` (no cursor), those
    /// just older than `olderThan`, or those just newer than `newerThan`;
    /// with the cursors of the pages beyond it either way.
    func page(olderThan: Int?, newerThan: Int?, size: Int) -> (ids: [String], next: String?, previous: String?) {
        let size = max(1, size)
        var start: Int
        var end: Int
        if let newerThan {
            start = firstIndex { $0 > newerThan }
            end = min(order.count, start + size)
        } else {
            end = olderThan.map { n in firstIndex { $0 >= n } } ?? order.count
            start = max(0, end - size)
        }
        let ids = Array(order[start..<end].reversed())
        let next = start > 0 && start < end ? "b\(seqs[start])" : nil
        let previous = end < order.count && start < end ? "a\(seqs[end - 1])" : nil
        return (ids, next, previous)
    }

    /// The first place whose seq passes `test` (which is false, then true, along `seqs`).
    private func firstIndex(_ test: (Int) -> Bool) -> Int {
        var lo = 0
        var hi = seqs.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if test(seqs[mid]) { hi = mid } else { lo = mid + 1 }
        }
        return lo
    }

    func save(_ id: String) throws {
        guard let p = predictions[id], let n = seq[id] else { return }
        let wrapper = JSONValue.object(["seq": .number(Double(n)), "prediction": .object(p)])
        try Files.writeAtomically(dir + "/predictions/\(id).json", wrapper.bytes)
    }
}

/// Uploads and outputs, served at `/v1/files/<id>/<name>` for a limited
/// time: `DIR/files/<id>/<name>` and `DIR/files/<id>/meta.json`.
struct FileStore: Sendable {
    let dir: String
    let lifetime: Double

    struct Stored: Sendable {
        var id: String
        var name: String
        var contentType: String
        var size: Int
        var sha256: String
        var created: Double
    }

    init(dir: String, lifetime: Double) throws {
        self.dir = dir
        self.lifetime = lifetime
        try Files.makeDirectories(dir)
    }

    func add(_ bytes: [UInt8], name: String, contentType: String, now: Double) throws -> Stored {
        let id = RandomID.uuid().replacingOccurrences(of: "-", with: "").lowercased()
        var safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-" ? $0 : "_" }.prefix(100))
        if safe.isEmpty || safe.hasPrefix(".") || safe == "meta.json" { safe = "file" + safe }
        let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        let stored = Stored(id: id, name: safe, contentType: contentType, size: bytes.count, sha256: digest, created: now)
        try Files.makeDirectories(dir + "/" + id)
        try Files.writeAtomically(dir + "/\(id)/\(safe)", bytes)
        let meta = JSONValue.object(["name": .string(safe), "content_type": .string(contentType), "size": .number(Double(bytes.count)),
                                     "sha256": .string(digest), "created": .number(now)])
        try Files.writeAtomically(dir + "/\(id)/meta.json", meta.bytes)
        return stored
    }

    /// A file that is still served; nil when unknown or expired.
    func find(_ id: String, now: Double) -> Stored? {
        guard !id.isEmpty, id.allSatisfy({ $0.isHexDigit }),
              let bytes = try? LocalFileSystem().readFile(dir + "/\(id)/meta.json", limit: 1 << 16), let m = JSONValue.parse(bytes),
              let name = m["name"]?.stringValue, let type = m["content_type"]?.stringValue,
              case .number(let size)? = m["size"], case .number(let created)? = m["created"] else { return nil }
        guard now - created <= lifetime else { return nil }
        return Stored(id: id, name: name, contentType: type, size: Int(size), sha256: m["sha256"]?.stringValue ?? "", created: created)
    }

    func bytes(_ f: Stored) -> [UInt8]? {
        try? LocalFileSystem().readFile(dir + "/\(f.id)/\(f.name)", limit: 1 << 34)
    }

    func remove(_ id: String) {
        guard !id.isEmpty, id.allSatisfy({ $0.isHexDigit }) else { return }
        try? Files.removeTree(dir + "/" + id)
    }

    /// Every file still served, newest first.
    func all(now: Double) -> [Stored] {
        ((try? LocalFileSystem().listDirectory(dir)) ?? []).compactMap { find($0, now: now) }.sorted { $0.created > $1.created }
    }

    /// Removes the expired ones (and any without metadata: a crash mid-write).
    func sweep(now: Double) {
        for id in (try? LocalFileSystem().listDirectory(dir)) ?? [] where find(id, now: now) == nil {
            remove(id)
        }
    }
}
