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
        func load(_ dir: String, into list: inout [(file: String, await: AwaitRecord)]) {
            let names = ((try? fileSystem.listDirectory(Path.join(path, dir))) ?? []).filter { $0.hasSuffix(".await.yaml") }.sorted()
            for name in names {
                let file = Path.join(path, dir + "/" + name)
                guard let bytes = try? fileSystem.readFile(file, limit: 1 << 20) else { continue }
                switch AwaitCodec.decode(bytes, file: file) {
                case .success(let a): list.append((file, a))
                case .failure(let d): result.problems.append(DiagnosticRenderer(sources: [file: String(decoding: bytes, as: UTF8.self)]).render(d))
                }
            }
        }
        load(InstancePaths.inbox, into: &result.open)
        if includeDone { load(InstancePaths.inboxDone, into: &result.done) }
        return result
    }
}
