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
