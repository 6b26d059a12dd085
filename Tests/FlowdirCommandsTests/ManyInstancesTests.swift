import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Many instances under one watcher, more ready steps than the machine's
/// slots: each waits its turn and none is forgotten. An instance whose node
/// waited for a slot used to be closed as idle once its linger passed, and
/// looked at again only on its next event: most stayed `ready` for good.
extension WatchCommandTests {
    @Test func everyInstanceGetsASlotInTurn() async throws {
        try await offPool { try self.manyInstances() }
    }

    func manyInstances() throws {
        let count = 40
        let w = try Watching(template: "schema: app.workflow/v2\nname: One\nnodes:\n  - { id: s, kind: Echo, params: { sleep: 0.2 } }\n")
        for i in 1...count { #expect(try w.flowdir(["new", "wf/t.yaml", "root/i\(i)"]).status == 0) }
        try w.start()
        // Two local slots: 40 steps of 0.2 s take 4 s. A forgotten one stays `ready` for good.
        try w.waitFor("every instance", timeout: 120) { (1...count).allSatisfy { w.state("s", in: "i\($0)") == "succeeded" } }
        w.stop()
        for i in [1, count / 2, count] { try GitCLI.expectHealthy(w.inst("i\(i)")) }
    }
}
