#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// The job server's predictions and files, kept as files under `--dir` so a
/// restarted server still answers for them (DESIGN.md §12).
struct PredictionStore {
    let dir: String
    /// Newest last.
    private(set) var order: [String] = []
    private(set) var predictions: [String: [String: JSONValue]] = [:]
    private var seq: [String: Int] = [:]

    init(dir: String) throws {
        self.dir = dir
        try Files.makeDirectories(dir + "/predictions")
        try Files.makeDirectories(dir + "/files")
        var loaded: [(Int, String, [String: JSONValue])] = []
        for name in (try? LocalFileSystem().listDirectory(dir + "/predictions")) ?? [] where name.hasSuffix(".json") {
            guard let bytes = try? LocalFileSystem().readFile(dir + "/predictions/" + name, limit: 64 << 20),
                  let json = JSONValue.parse(bytes), case .object(let wrapper) = json,
                  case .number(let n)? = wrapper["seq"], case .object(let p)? = wrapper["prediction"], let id = p["id"]?.stringValue else { continue }
            loaded.append((Int(n), id, p))
        }
        for (n, id, p) in loaded.sorted(by: { $0.0 < $1.0 }) {
            order.append(id)
            seq[id] = n
            predictions[id] = p
        }
    }

    /// Predictions made since the server's folder was made: its own count.
    var created: Int { order.count }

    mutating func add(_ p: [String: JSONValue]) {
        let id = p["id"]!.stringValue!
        order.append(id)
        seq[id] = (seq.values.max() ?? 0) + 1
        predictions[id] = p
        save(id)
    }

    mutating func update(_ id: String, save persist: Bool = true, _ change: (inout [String: JSONValue]) -> Void) {
        guard predictions[id] != nil else { return }
        change(&predictions[id]!)
        if persist { save(id) }
    }

    func save(_ id: String) {
        guard let p = predictions[id], let n = seq[id] else { return }
        let wrapper = JSONValue.object(["seq": .number(Double(n)), "prediction": .object(p)])
        try? Files.writeAtomically(dir + "/predictions/\(id).json", wrapper.bytes)
    }

    // MARK: Files (uploads and outputs)

    /// Keeps `bytes` as a file served at /v1/files/<id>; its id.
    func addFile(_ bytes: [UInt8], name: String, contentType: String) throws -> String {
        let id = RandomID.uuid().replacingOccurrences(of: "-", with: "")
        let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-" ? $0 : "_" }.prefix(80))
        try Files.makeDirectories(dir + "/files/" + id)
        try Files.writeAtomically(dir + "/files/\(id)/\(safe.isEmpty ? "file" : safe)", bytes)
        try Files.writeAtomically(dir + "/files/\(id)/.type", Array(contentType.utf8))
        return id
    }

    /// A served file: its bytes, name and type; nil when gone or expired.
    func file(_ id: String, maxAge: Double, now: Double) -> (bytes: [UInt8], name: String, type: String)? {
        guard id.allSatisfy({ $0.isHexDigit }), let names = try? LocalFileSystem().listDirectory(dir + "/files/" + id),
              let name = names.first(where: { $0 != ".type" }) else { return nil }
        let path = dir + "/files/\(id)/\(name)"
        var st = stat()
        if stat(path, &st) == 0, now - Double(st.st_mtim.tv_sec) > maxAge { return nil }
        guard let bytes = try? LocalFileSystem().readFile(path, limit: 1 << 32) else { return nil }
        let type = (try? LocalFileSystem().readFile(dir + "/files/\(id)/.type", limit: 256)).map { String(decoding: $0, as: UTF8.self) }
        return (bytes, name, type ?? "application/octet-stream")
    }
}
