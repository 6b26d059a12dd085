import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Commits written on the store's own thread (`flowdir run`'s job
/// bookkeeping): made in order, never raced by another use of the store,
/// and a failure stops the rest and is reported.
@Suite(.tags(.medium)) struct BackgroundCommitTests {
    func message(_ i: Int) -> CommitMessage { CommitMessage(summary: "step \(i)", event: "test") }

    @Test func commitsAreMadeInOrderAndEveryOtherUseWaitsForThem() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        try store.commit([.write("instance.yaml", "id: x\n")], message: message(0))
        let made = Locked<[ObjectID]>([])
        for i in 1...60 {
            try store.commitInBackground([.write("nodes/a/state.yaml", "n: \(i)\n"), .write("nodes/a/runs/\(i)/run.yaml", "run: \(i)\n")],
                                         message: message(i)) { id in made.locked { $0.append(id!) } }
        }
        // Asked at once: each waits for all 60 to be made, then answers.
        #expect(store.read("nodes/a/state.yaml") == Array("n: 60\n".utf8))
        let head = try #require(store.head)
        #expect(head.message.hasPrefix("step 60"))
        let ids = made.locked { $0 }
        #expect(ids.count == 60 && ids.last == head.id)
        #expect(!store.isCommittingInBackground)
        try store.flushIndex()
        try GitCLI.expectHealthy(store.path)
        let log = try GitCLI.run(["log", "--format=%s"], in: store.path).split(separator: "\n")
        #expect(log.prefix(3) == ["step 60", "step 59", "step 58"] && log.count == 61)
        #expect(try GitCLI.run(["status", "--porcelain"], in: store.path).isEmpty)
        // Each commit is the one before it plus its change: the parents chain in the order handed in.
        #expect(try GitCLI.run(["rev-list", "--count", "HEAD"], in: store.path).trimmingCharacters(in: .newlines) == "61")
        #expect(ids == (try GitCLI.run(["rev-list", "--reverse", "HEAD"], in: store.path)).split(separator: "\n").dropFirst().map {
            ObjectID(hex: String($0))!
        })
    }

    /// A commit that fails (git holds its index lock past the wait) is
    /// reported, keeps the ones after it behind it (none is made out of
    /// order, none dropped), and all are made once it can be.
    @Test func aFailedCommitKeepsTheOnesAfterItUntilItIsMade() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        store.gitLockTimeout = 0.05
        try store.commit([.write("first.txt", "a\n")], message: message(0))
        try store.flushIndex()
        let before = try #require(store.head?.id)
        let gitsLock = store.path + "/.git/index.lock"
        try Data("DIRC".utf8).write(to: URL(fileURLWithPath: gitsLock))
        try store.commitInBackground([.write("one.txt", "1\n")], message: message(1))
        try store.commitInBackground([.write("two.txt", "2\n")], message: message(2))
        #expect(throws: CommitFailure.self) { try store.waitForBackgroundCommits() }
        #expect(store.head?.id == before)
        #expect(!FileManager.default.fileExists(atPath: store.path + "/two.txt"), "nothing after the failure is written")
        #expect(throws: CommitFailure.self) { try store.commit([.write("three.txt", "3\n")], message: message(3)) }
        #expect(store.hasFailedWrites)
        // git lets go: every commit is made, in the order handed in.
        try FileManager.default.removeItem(atPath: gitsLock)
        try store.retryFailedWrites()
        try store.waitForBackgroundCommits()
        try store.commit([.write("four.txt", "4\n")], message: message(4))
        try store.close()
        try GitCLI.expectHealthy(store.path)
        let log = try GitCLI.run(["log", "--format=%s"], in: store.path).split(separator: "\n")
        #expect(log == ["step 4", "step 3", "step 2", "step 1", "step 0"])
    }

    @Test func anIndexWrittenInBackgroundLeavesTheJournalForTheNextFlush() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        try store.commitInBackground([.write("nodes/a/state.yaml", "state: running\n")], message: message(1))
        try store.flushIndexInBackground()
        // Named after the index was handed off: a later commit's path, which a crash must still put back.
        try store.intend(["nodes/a/out/out.bin"])
        try store.waitForBackgroundCommits()
        #expect(try GitCLI.run(["status", "--porcelain"], in: store.path).isEmpty, "the index is in step with HEAD")
        let journal = store.path + "/" + InstancePaths.local + "/journal"
        #expect(try String(contentsOfFile: journal, encoding: .utf8).contains("nodes/a/out/out.bin"))
        try store.flushIndex()
        #expect(try String(contentsOfFile: journal, encoding: .utf8).isEmpty)
    }
}
