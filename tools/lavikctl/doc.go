// Command lavikctl is the operator's command line for a Lavik deployment. It talks gRPC only:
// to each lavik-data node's DataAdmin service (the node's --admin-port) and to lavik-meta's
// Meta service (--meta, the members' client addresses). It never speaks RESP.
//
// Commands (one file each; every one prints through the one table/JSON printer in output.go,
// built from a typed document whose json tags are the stable --json field names):
//
//	status   --data a,b,...    DataAdmin.Status on every node at once: role, epoch, writability,
//	                           replication offset, lag (a follower's behind its primary, or a
//	                           node's followers' acknowledged offsets), keys, disk bytes, version;
//	                           then lavik-meta's members and leader, or "meta: not configured"
//	                           (metaSummary is the one place status asks meta).
//	rebuild  --data --primary  DataAdmin.Rebuild of a follower, then Status every 200 ms with a
//	                           byte-counting spinner (plain lines at most once a second when stderr
//	                           is not a terminal) until the link is ONLINE and the follower's
//	                           offset has reached its primary's.
//	promote  [NODE]            Meta.Promote (switchover or failover of a shard group).
//	topology                   Meta.GetTopology: shard groups, epochs, slots, nodes.
//	meta list|add|remove       Meta.ListMembers, AddMember, RemoveMember.
//
// Global flags: --meta host:port[,...], --json, --timeout (each call's limit, default 5s); they
// may come before or after the command. The meta commands refuse without --meta (exit status
// 2); with it they try the members in order, moving on only from one that cannot be reached
// (nothing was sent), and follow an UNAVAILABLE answer carrying a NotLeader detail to the leader
// it names, once (metaclient.go).
//
// Exit statuses: 0 every operation succeeded; 1 an operation failed (a node unreachable, a call
// refused, a rebuild broken off); 2 a usage error; 3 a timeout (every failure was a call that
// ran past --timeout, or rebuild's --wait-timeout). Error messages name the address, the reason
// as an operator would search for it (connection refused, no such host) and the next step:
// "cannot reach data node 127.0.0.1:7000 (connection refused): is lavik-data running with
// --admin-port 7000?". dial.go keeps each connection's last dial error to say so, rather than
// parsing gRPC's transport messages.
//
// Rejected: a RESP fallback for status (INFO carries no epoch and needs the data port, which the
// operator then has to know too), and retrying meta calls in a loop (an operator should see an
// election going on, not a command that hangs through it).
package main
