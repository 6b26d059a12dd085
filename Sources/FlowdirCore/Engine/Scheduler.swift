/// Concurrency caps for the two queues.
public struct QueueCaps: Hashable, Sendable {
    public var local: Int
    public var remote: Int

    public init(local: Int, remote: Int) {
        self.local = local
        self.remote = remote
    }

    public subscript(_ c: ResourceClass) -> Int {
        get {
            switch c {
            case .local: local
            case .remote: remote
            }
        }
        set {
            switch c {
            case .local: local = newValue
            case .remote: remote = newValue
            }
        }
    }
}

/// A ready node asking for a slot.
public struct SlotRequest: Hashable, Sendable {
    public var instance: String
    public var node: String
    public var resourceClass: ResourceClass
    /// When a person (or an event) last touched the instance.
    public var touchedAt: Timestamp
    /// When the instance last got a slot (a counter will do); `nil` never.
    /// Instances served longest ago come first: round-robin across calls.
    public var lastServed: Int?

    public init(instance: String, node: String, resourceClass: ResourceClass, touchedAt: Timestamp, lastServed: Int? = nil) {
        self.instance = instance
        self.node = node
        self.resourceClass = resourceClass
        self.touchedAt = touchedAt
        self.lastServed = lastServed
    }
}

/// Which ready nodes start now (docs/engine.md, "Scheduling and caps"): within each
/// instance's caps and the machine's, first the most recently touched
/// instance, then round-robin across instances; within an instance, graph
/// order (the order the requests come in).
public enum Scheduler {
    public static func select(_ requests: [SlotRequest], running: [String: [ResourceClass: Int]],
                              instanceCaps: [String: QueueCaps], machineCaps: QueueCaps) -> [SlotRequest] {
        if let first = requests.first, requests.allSatisfy({ $0.instance == first.instance }) {
            return selectInOne(requests, of: first.instance, running: running, caps: instanceCaps[first.instance] ?? machineCaps,
                               machineCaps: machineCaps)
        }
        return selectAcross(requests, running: running, instanceCaps: instanceCaps, machineCaps: machineCaps)
    }

    /// One instance asking (`flowdir run`, on every event): its requests in
    /// order, each while both its caps and the machine's have room. What
    /// `selectAcross` does then, without its tables by instance.
    static func selectInOne(_ requests: [SlotRequest], of instance: String, running: [String: [ResourceClass: Int]],
                            caps: QueueCaps, machineCaps: QueueCaps) -> [SlotRequest] {
        var usedHere = QueueCaps(local: 0, remote: 0), usedAll = QueueCaps(local: 0, remote: 0)
        for (other, counts) in running {
            for (c, n) in counts {
                usedAll[c] += n
                if other == instance { usedHere[c] += n }
            }
        }
        var picked: [SlotRequest] = []
        for r in requests where usedHere[r.resourceClass] < caps[r.resourceClass] && usedAll[r.resourceClass] < machineCaps[r.resourceClass] {
            picked.append(r)
            usedHere[r.resourceClass] += 1
            usedAll[r.resourceClass] += 1
        }
        return picked
    }

    static func selectAcross(_ requests: [SlotRequest], running: [String: [ResourceClass: Int]],
                             instanceCaps: [String: QueueCaps], machineCaps: QueueCaps) -> [SlotRequest] {
        var byInstance: [String: [SlotRequest]] = [:]
        for r in requests { byInstance[r.instance, default: []].append(r) }
        let order = byInstance.keys.sorted {
            let x = byInstance[$0]![0], y = byInstance[$1]![0]
            let sx = x.lastServed ?? Int.min, sy = y.lastServed ?? Int.min
            if sx != sy { return sx < sy }
            return x.touchedAt != y.touchedAt ? x.touchedAt > y.touchedAt : $0 < $1
        }
        var machineUsed: [ResourceClass: Int] = [:]
        for counts in running.values { for (c, n) in counts { machineUsed[c, default: 0] += n } }
        var instanceUsed = running
        var cursor = [String: Int]()
        var picked: [SlotRequest] = []
        var progress = true
        while progress {
            progress = false
            for instance in order {
                guard var i = cursor[instance] ?? Optional(0), let queue = byInstance[instance] else { continue }
                // The next request of this instance that has room.
                while i < queue.count {
                    let r = queue[i]
                    let caps = instanceCaps[instance] ?? machineCaps
                    let usedHere = instanceUsed[instance]?[r.resourceClass] ?? 0
                    let usedAll = machineUsed[r.resourceClass] ?? 0
                    i += 1
                    if usedHere < caps[r.resourceClass], usedAll < machineCaps[r.resourceClass] {
                        picked.append(r)
                        instanceUsed[instance, default: [:]][r.resourceClass, default: 0] += 1
                        machineUsed[r.resourceClass, default: 0] += 1
                        progress = true
                        break
                    }
                }
                cursor[instance] = i
            }
        }
        return picked
    }
}
