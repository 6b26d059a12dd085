#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// The instances this user's flowdir has created, cloned or watched:
/// `$XDG_STATE_HOME/flowdir/instances` (default `~/.local/state/flowdir/`),
/// one `<id>\t<path>` a line, so that an id or a `flowdir://` link finds
/// its instance from any folder without walking the roots.
///
/// Appended to (a line written whole with O_APPEND is never torn between
/// two writers); read by the few commands that look an instance up by id.
/// A line whose folder is no longer that instance is passed over, and the
/// file is written again without such lines when it has grown.
public struct InstanceRegistry: Sendable {
    public let file: String

    public init(stateHome: String) { file = stateHome + "/flowdir/instances" }

    /// Every line, newest last (a path may stand under several ids, an id under several paths).
    public func entries() -> [(id: String, path: String)] {
        guard let bytes = try? LocalFileSystem().readFile(file, limit: 64 << 20) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line -> (id: String, path: String)? in
            let parts = line.split(separator: "\t", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            return (String(parts[0]), String(parts[1]))
        }
    }

    /// Remembers `path` (made absolute) as instance `id`, unless it is remembered already.
    public func remember(id: String, path: String) { remember([(id, path)]) }

    /// Remembers each, reading the file once (a watcher starting over many instances).
    public func remember(_ instances: [(id: String, path: String)]) {
        let known = entries()
        var have = Set(known.map { $0.id + "\t" + $0.path })
        var new: [(String, String)] = []
        for (id, path) in instances {
            guard !id.isEmpty, !id.contains("\t"), !id.contains("\n"), let real = Files.realPath(path),
                  !real.contains("\n"), have.insert(id + "\t" + real).inserted else { continue }
            new.append((id, real))
        }
        guard !new.isEmpty else { return }
        append(new)
        if known.count + new.count > 2 * max(1_000, Set(known.map(\.path)).count) { compact(known + new) }
    }

    /// The folders remembered for `id` that still hold an instance with that id.
    public func paths(for id: String, reader: InstanceReader) -> [String] {
        var seen = Set<String>()
        return entries().reversed().filter { $0.id == id && seen.insert($0.path).inserted }.map(\.path).filter {
            (try? reader.read(instanceRecordOnly: $0))??.id == id
        }
    }

    private func append(_ lines: [(String, String)]) {
        try? Files.makeDirectories(Path.directory(of: file))
        let text = lines.map { "\($0.0)\t\($0.1)\n" }.joined()
        let fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        _ = Files.writeAll(fd, Array(text.utf8))
        close(fd)
    }

    /// Keeps the newest line for each path whose folder is still an instance.
    private func compact(_ all: [(id: String, path: String)]) {
        var seen = Set<String>()
        var kept: [(String, String)] = []
        for e in all.reversed() where seen.insert(e.path).inserted && Files.exists(e.path + "/" + InstancePaths.instanceFile) {
            kept.append((e.id, e.path))
        }
        _ = try? Files.writeAtomically(file, kept.reversed().map { "\($0.0)\t\($0.1)\n" }.joined())
    }
}
