import FlowdirCore
import FlowdirTemplates

/// The questions of one instance, read without taking its lock.
public struct InstanceAwaits: Sendable {
    public var path: String
    public var record: InstanceRecord
    /// `inbox/<node>.await.yaml`, with the file of each.
    public var open: [(file: String, await: AwaitRecord)]
    /// `inbox/done/`.
    public var done: [(file: String, await: AwaitRecord)]
    /// Await files that could not be read, and why.
    public var problems: [String]
}

extension InstanceReader {
    public func awaits(_ path: String, includeDone: Bool = true) throws(InstanceError) -> InstanceAwaits {
        guard let record = try read(instanceRecordOnly: path) ?? (try? read(path))?.record else {
            throw .notAnInstance(path)
        }
        var result = InstanceAwaits(path: path, record: record, open: [], done: [], problems: [])
        // Problems are gathered apart from the lists: `result` is not touched
        // while one of its lists is being filled (that overlap was a trap).
        var problems: [String] = []
        func load(_ dir: String) -> [(file: String, await: AwaitRecord)] {
            if let link = fileSystem.firstLink(inside: path, among: [dir]) {
                problems.append(FileSystemError.symbolicLink(link).description)
                return []
            }
            var list: [(file: String, await: AwaitRecord)] = []
            let names = ((try? fileSystem.listDirectory(Path.join(path, dir))) ?? []).filter { $0.hasSuffix(".await.yaml") }.sorted()
            for name in names {
                let file = Path.join(path, dir + "/" + name)
                let bytes: [UInt8]
                do {
                    guard let b = try fileSystem.readFile(inside: path, dir + "/" + name, limit: 1 << 20) else { continue }
                    bytes = b
                } catch {
                    problems.append("\(error)")  // a link: never read through, said so
                    continue
                }
                switch AwaitCodec.decode(bytes, file: file) {
                case .success(let a): list.append((file, a))
                case .failure(let d): problems.append(DiagnosticRenderer(sources: [file: String(decoding: bytes, as: UTF8.self)]).render(d))
                }
            }
            return list
        }
        result.open = load(InstancePaths.inbox)
        if includeDone { result.done = load(InstancePaths.inboxDone) }
        result.problems = problems
        return result
    }
}
