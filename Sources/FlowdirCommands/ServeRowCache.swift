import FlowdirCore
import FlowdirIO
import FoundationEssentials

/// The list's rows, kept across restarts of `flowdir serve` in
/// `$XDG_STATE_HOME/flowdir/serve-rows.json` (mode 600): a server started on
/// a cold disk answers the list by stating three files an instance, not by
/// reading every instance whole (1.5 s for 1,000). Each row is taken only
/// while the stat of its instance's git index, `inbox/` and `instance.yaml`
/// is what it was when the row was read, as in memory (`ServeBackend.cachedRow`):
/// the file only saves the first reads, it is never trusted beyond that.
struct ServeRowCache: Sendable {
    typealias Rows = [String: (stamp: [FileStamp?], row: LsCommand.Row, updated: Timestamp)]

    let path: String

    init(stateHome: String) { path = stateHome + "/flowdir/serve-rows.json" }

    /// What changes the format; a file of another version is not read.
    static let version = 1

    private struct Entry: Codable {
        var folder: String
        var stamp: [FileStamp?]
        var row: LsCommand.Row
        var updated: Double
    }

    private struct Contents: Codable {
        var version: Int
        var entries: [Entry]
    }

    /// The rows kept, or none when the file is missing, unreadable or of another version.
    func load() -> Rows {
        guard let bytes = try? LocalFileSystem().readFile(path, limit: 256 << 20),
              let contents = try? JSONDecoder().decode(Contents.self, from: Data(bytes)), contents.version == Self.version else { return [:] }
        var rows: Rows = [:]
        for e in contents.entries { rows[e.folder] = (e.stamp, e.row, Timestamp(seconds: e.updated)) }
        return rows
    }

    /// Writes `rows` whole (temp file and rename): a reader never sees half of it.
    func save(_ rows: Rows) throws {
        let entries = rows.sorted { $0.key < $1.key }.map { Entry(folder: $0.key, stamp: $0.value.stamp, row: $0.value.row, updated: $0.value.updated.seconds) }
        let bytes = try JSONEncoder().encode(Contents(version: Self.version, entries: entries))
        try Files.makeDirectories(Path.directory(of: path))
        try Files.writeAtomically(path, Array(bytes), mode: 0o600)
    }
}
