import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// kill -9 in the middle of commits, again and again: the repository stays
/// valid and every commit that completed is intact.
@Suite(.tags(.medium)) struct CrashTests {
    @Test func killNineDuringABurstOfCommits() async throws {
        try await offPool { try self.burst() }
    }

    func burst() throws {
        let dir = try TemporaryDirectory()
        let repo = dir.path + "/burst"
        try InstanceStore.create(at: repo).close()
        let bench = RepositoryPaths.productsDirectory + "/flowdir-bench"
        var completed: [String] = []
        var rng = SplitMix(seed: 9)
        for round in 0..<12 {
            let out = dir.path + "/out-\(round).txt"
            #expect(FileManager.default.createFile(atPath: out, contents: nil))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: bench)
            process.arguments = ["commit-burst", repo, "--count", "5000"]  // far more than a round commits before its kill
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Once commits are flowing (start-up is slow when the machine is busy),
            // kill at a random moment among them.
            Eventually.blockingUntil(every: .milliseconds(2)) {
                ((try? String(contentsOfFile: out, encoding: .utf8))?.split(separator: "\n").count ?? 0) >= 1
            }
            usleep(UInt32(rng.next() % 150_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)
            let ids = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
                .map(String.init).filter { $0.count == 40 }
            completed += ids
            // Reopening repairs what the kill interrupted.
            try InstanceStore.open(repo, purpose: "test").close()
            try GitCLI.expectHealthy(repo, allowDangling: true)
            // Every completed commit is there and in HEAD's history.
            for id in ids.suffix(3) + completed.prefix(2) {
                try GitCLI.run(["merge-base", "--is-ancestor", id, "HEAD"], in: repo)
            }
        }
        #expect(completed.count >= 12)  // every round killed a burst that had committed
        let count = Int(try GitCLI.run(["rev-list", "--count", "HEAD"], in: repo).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        // The one commit of the first create, plus at least every reported one.
        #expect(count >= completed.count)
    }
}
