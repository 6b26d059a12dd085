#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// The job server's predictions, kept as files under `--dir` so that a
/// restarted server still answers for them (docs/jobserver.md, "Kept as files"):
/// `DIR/predictions/<id>.json` is `{"seq": N, "prediction": {…}}`, written
/// whole to a temporary name and renamed over the old one, so a crash
/// leaves the old version or the new one, never half of one. `seq` keeps
/// the order they were made in, for the newest-first list; `files` names
/// the files its output is served from, removed with it.
///
/// Ended predictions are kept for a stated time and up to a stated count
/// (`expired`), then removed with their files: nothing a client sends is
/// kept for good.
struct PredictionStore {
    let dir: String
    /// Oldest first.
    private(set) var order: [String] = []
    private(set) var predictions: [String: [String: JSONValue]] = [:]
    private var seq: [String: Int] = [:]
    /// `seq` of `order`'s ids, in the same places (ascending).
    private var seqs: [Int] = []
    private var lastSeq = 0
    /// The files each prediction's output is served from.
    private(set) var files: [String: [String]] = [:]
    /// Made since this folder was first used (removed ones too).
    private(set) var made = 0

    init(dir: String) throws {
        self.dir = dir
        try Files.makeDirectories(dir + "/predictions")
        var loaded: [(Int, String, [String: JSONValue], [String])] = []
        for name in try LocalFileSystem().listDirectory(dir + "/predictions") where name.hasSuffix(".json") {
            // One unreadable file (a disk error, a hand edit) costs that prediction, not the server.
            guard let bytes = try? LocalFileSystem().readFile(dir + "/predictions/" + name, limit: 256 << 20),
                  let json = JSONValue.parse(bytes), case .number(let n)? = json["seq"],
                  case .object(let p)? = json["prediction"], let id = p["id"]?.stringValue, n.isFinite, n >= 0, n < 1e15,
                  !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { continue }
            loaded.append((Int(n), id, p, json["files"].map { $0.arrayOfStrings } ?? []))
        }
        for (n, id, p, f) in loaded.sorted(by: { $0.0 < $1.0 }) {
            order.append(id)
            seqs.append(n)
            seq[id] = n
            predictions[id] = p
            if !f.isEmpty { files[id] = f }
        }
        lastSeq = loaded.map(\.0).max() ?? 0
        made = lastSeq
    }

    /// Predictions this folder holds now.
    var count: Int { order.count }

    mutating func add(_ p: [String: JSONValue]) throws {
        let id = p["id"]!.stringValue!
        lastSeq += 1
        order.append(id)
        seqs.append(lastSeq)
        seq[id] = lastSeq
        predictions[id] = p
        made = lastSeq
        do { try save(id) } catch {
            remove(id)
            throw error
        }
    }

    /// Notes a file served for the prediction's output (saved with its next change).
    mutating func attach(_ file: String, to id: String) {
        guard predictions[id] != nil else { return }
        files[id, default: []].append(file)
    }

    /// Forgets it and removes its file; returns the files it had.
    @discardableResult
    mutating func remove(_ id: String) -> [String] {
        guard predictions.removeValue(forKey: id) != nil, let n = seq.removeValue(forKey: id) else { return [] }
        let i = firstIndex { $0 >= n }
        if i < seqs.count, seqs[i] == n {
            seqs.remove(at: i)
            order.remove(at: i)
        }
        unlink(dir + "/predictions/\(id).json")
        return files.removeValue(forKey: id) ?? []
    }

    /// Ended predictions to remove: those that ended more than `keep`
    /// seconds ago, and the oldest ended ones past `max` in all. Running
    /// ones are never among them.
    func expired(now: Double, keep: Double, max: Int, isActive: (String) -> Bool) -> [String] {
        var out: [String] = []
        var left = order.count
        for id in order where !isActive(id) {
            let ended = predictions[id]?["completed_at"]?.stringValue.flatMap(JobServerCore.parseTime)
                ?? predictions[id]?["created_at"]?.stringValue.flatMap(JobServerCore.parseTime) ?? 0
            if left > max || now - ended > keep {
                out.append(id)
                left -= 1
            }
        }
        return out
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
        var wrapper: [String: JSONValue] = ["seq": .number(Double(n)), "prediction": .object(p)]
        if let f = files[id] { wrapper["files"] = .array(f.map(JSONValue.string)) }
        try Files.writeAtomically(dir + "/predictions/\(id).json", JSONValue.object(wrapper).bytes)
    }
}

extension JSONValue {
    var arrayOfStrings: [String] {
        if case .array(let a) = self { return a.compactMap(\.stringValue) }
        return []
    }
}
