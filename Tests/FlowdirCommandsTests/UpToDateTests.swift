import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// The run that finishes a workflow notes that nothing more can happen, so
/// the next `flowdir run` says it is up to date from stat data alone, as
/// make does, instead of reading the whole instance once more first.
extension RunCommandTests {
    @Test func theRunThatFinishesNotesItIsUpToDate() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let inst = try self.makeInstance(dir)
            let noted = inst + "/.flowdir/up-to-date"
            #expect(try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: self.env).status == 0)
            #expect(FileManager.default.fileExists(atPath: noted), "noted by the run that did the work")
            let text = try String(contentsOfFile: noted, encoding: .utf8)
            #expect(text.contains("head \(try GitCLI.run(["rev-parse", "HEAD"], in: inst).trimmingCharacters(in: .newlines))"))
            #expect(try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: self.env).stdout == "6 succeeded\n")
            // An output removed by hand is not hidden by the note: the next run opens the instance and puts it back.
            try FileManager.default.removeItem(atPath: inst + "/nodes/end/out/out.txt")
            let r = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: self.env)
            #expect(r.status == 0 && r.stderr.contains("put back nodes/end/out/out.txt"), "\(r.stderr)")
            try GitCLI.expectHealthy(inst)
        }
    }
}
