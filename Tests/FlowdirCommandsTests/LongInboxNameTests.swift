import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// A file dropped with a name near the file system's 255-byte limit cannot
/// be renamed to `<name>.rejected`: it is set aside under a shortened name,
/// and a valid answer beside it still goes through.
extension InboxCommandTests {
    @Test func aVeryLongNameIsSetAsideAndDoesNotWedgeTheInbox() async throws {
        try await offPool { try self.longName() }
    }

    func longName() throws {
        let s = try Setup(template: Self.ask)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        let long = "pick.a" + String(repeating: "é", count: 120) + ".png"  // 250 bytes
        #expect(long.utf8.count == 250)
        try s.write("inbox/" + long, SampleFiles.png())
        let noDots = String(repeating: "x", count: 250)
        try s.write("inbox/" + noDots, SampleFiles.png())
        try s.write("inbox/pick.image.png", SampleFiles.png())
        let r = try s.flowdir(["run", "inst"])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(try s.state("pick") == "succeeded")
        #expect(try s.state("mask") == "awaitingUser")
        let inbox = try FileManager.default.contentsOfDirectory(atPath: s.inst + "/inbox")
        let aside = inbox.filter { $0.hasSuffix(".rejected") }
        #expect(aside.count == 2, "\(inbox)")
        #expect(aside.allSatisfy { $0.utf8.count <= 255 && $0.contains("~") }, "\(aside)")
        #expect(!inbox.contains(long) && !inbox.contains(noDots))
        for kept in aside { #expect(try Data(contentsOf: URL(fileURLWithPath: s.inst + "/inbox/" + kept)) == Data(SampleFiles.png())) }
        try GitCLI.expectHealthy(s.inst)
    }
}

extension WatchCommandTests {
    /// A drop `flowdir run` refuses (a port name with non-ASCII letters, a
    /// node that does not exist) is refused by the watcher too, at once:
    /// set aside with a note, never silently ignored.
    @Test func theWatcherRefusesWhatRunRefuses() async throws {
        try await offPool { try self.watcherRefuses() }
    }

    func watcherRefuses() throws {
        let w = try Watching(template: Self.pickers("Refuse", count: 1))
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("the question") { w.state("p1") == "awaitingUser" }
        for name in ["p1.imagé.png", "pé.image.png"] {
            try Data(SampleFiles.png()).write(to: URL(fileURLWithPath: w.inst() + "/inbox/" + name))
            try w.waitFor("\(name) to be refused") {
                FileManager.default.fileExists(atPath: w.inst() + "/inbox/" + name + ".rejected")
            }
        }
        #expect(w.state("p1") == "awaitingUser")
        try w.quiet()
        w.stop()
        try GitCLI.expectHealthy(w.inst())
    }
}
