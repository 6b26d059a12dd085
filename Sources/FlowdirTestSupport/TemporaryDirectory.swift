import Foundation

/// A directory removed when the value goes away; kept, to look at after a
/// failure, when `FLOWDIR_TEST_KEEP=1`.
public final class TemporaryDirectory {
    static let keep = ProcessInfo.processInfo.environment["FLOWDIR_TEST_KEEP"] == "1"

    public let path: String

    public init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/flowdir-test-" + UUID().uuidString.prefix(8).lowercased()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { if !Self.keep { try? FileManager.default.removeItem(atPath: path) } }

    public func write(_ relative: String, _ text: String) throws {
        let full = path + "/" + relative
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: true, encoding: .utf8)
    }
}

/// The real git CLI, used by tests only to check what flowdir wrote
/// (flowdir itself never runs git).
public enum GitCLI {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    @discardableResult
    public static func run(_ arguments: [String], in directory: String) throws -> String {
        let r = try CommandRunner.run("/usr/bin/git", arguments, in: directory,
                                      environment: ["GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"])
        guard r.status == 0 else {
            throw Failure(description: "git \(arguments.joined(separator: " ")) exited \(r.status): \(r.stderr)")
        }
        return r.stdout
    }

    /// Removes one object from a repository, as a pruned or shallow clone
    /// lacks it: packs are unpacked into loose objects first (a pack cannot
    /// lose one object), then that one is deleted.
    public static func loseObject(_ id: String, in repo: String) throws {
        let packs = repo + "/.git/objects/pack"
        let aside = repo + "/.git/packs-unpacked"
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: packs) where name.hasPrefix("pack-") {
            try FileManager.default.moveItem(atPath: packs + "/" + name, toPath: aside + "/" + name)
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: aside) where name.hasSuffix(".pack") {
            let r = try CommandRunner.run("/bin/sh", ["-c", "git unpack-objects -q < \"$0\"", aside + "/" + name], in: repo)
            guard r.status == 0 else { throw Failure(description: "git unpack-objects \(name): \(r.stderr)") }
        }
        try FileManager.default.removeItem(atPath: aside)
        try FileManager.default.removeItem(atPath: repo + "/.git/objects/" + id.prefix(2) + "/" + id.dropFirst(2))
    }

    /// `git fsck --strict` clean, `git status --porcelain` empty, log readable.
    /// `allowDangling`: after a kill -9, objects written for a commit that
    /// never happened are unreachable garbage (git gc prunes them), not damage.
    public static func expectHealthy(_ repo: String, allowDangling: Bool = false,
                                     sourceLocation: String = #fileID, line: Int = #line) throws {
        let fsck = try CommandRunner.run("/usr/bin/git", ["fsck", "--strict", "--no-progress"], in: repo)
        let problems = fsck.stdout.split(separator: "\n").filter { !(allowDangling && $0.hasPrefix("dangling ")) }
        guard fsck.status == 0, problems.isEmpty, fsck.stderr.isEmpty else {
            throw Failure(description: "git fsck --strict (\(sourceLocation):\(line)): \(fsck.stdout)\(fsck.stderr)")
        }
        let status = try run(["status", "--porcelain"], in: repo)
        guard status.isEmpty else { throw Failure(description: "git status not clean (\(sourceLocation):\(line)):\n\(status)") }
        _ = try run(["log", "--oneline"], in: repo)
    }
}

/// What tests read back from an instance folder.
public enum InstanceProbe {
    /// The `state:` of a node's state.yaml, or "?" when there is none.
    public static func state(_ instance: String, _ node: String) -> String {
        let s = (try? String(contentsOfFile: instance + "/nodes/\(node)/state.yaml", encoding: .utf8)) ?? ""
        return s.split(separator: "\n").first { $0.hasPrefix("state: ") }.map { String($0.dropFirst(7)) } ?? "?"
    }

    /// Commits whose trailer says `Flowdir-Event: <event>`.
    public static func commits(_ instance: String, event: String) throws -> Int {
        try GitCLI.run(["log", "--format=%B%x00"], in: instance).components(separatedBy: "\0")
            .filter { $0.contains("Flowdir-Event: \(event)\n") }.count
    }
}
