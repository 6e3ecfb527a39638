// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Why an RC connection or run failed and what to do: from the port, the GIDs of both sides, the completion. */
#include "pingpong/pp.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/*
 * What to tell the user about a failure involving the peer's GID: the GID we would use to reach it,
 * when it is not the one we use; whether the peer's address is reachable at all.
 */
static void gid_hint(const struct pp_choice *ch, const struct pp_dest *rem, char *hint, size_t len)
{
	struct sockaddr_storage dst, src;
	struct gid_table t = { 0 };
	struct gid_choice gc;
	char rip[INET6_ADDRSTRLEN], lip[INET6_ADDRSTRLEN], desc[160];
	int ret;

	*hint = '\0';
	if (gid_is_zero(rem->gid)) {
		snprintf(hint, len, "the peer sent no GID: on RoCE both sides need one; run ibv_rc_pingpong with -g "
			 "(e.g. the RoCE v2 GID of its IP address), or rdmactl pingpong without -g");
		return;
	}
	gid_ip_str(rem->gid, rip, sizeof(rip));
	gid_to_sockaddr(rem->gid, &dst);
	if (gid_is_link_local(rem->gid) && !gid_is_link_local(ch->gid.raw)) {
		snprintf(hint, len, "the peer uses its link-local GID %s while we use %s: make the peer use its "
			 "RoCE v2 IPv4 GID (rdmactl pingpong --check shows the index)", rip,
			 gid_ip_str(ch->gid.raw, lip, sizeof(lip)));
		return;
	}
	ret = gid_route_src_addr((struct sockaddr *)&dst, &src);
	if (ret) {
		snprintf(hint, len, "the peer's GID %s is unreachable from here: %s (check the IP addressing and "
			 "routes of the RoCE netdev)", gid_str(rem->gid, lip, sizeof(lip)), strerror(-ret));
		return;
	}
	if (gid_table_read(ch->dev, ch->port, &t))
		return;
	if (!gid_pick_for_addr(&t, ch->dev, ch->port, (struct sockaddr *)&src, &gc)) {
		if (gc.gid.index != ch->gidx)
			snprintf(hint, len, "our GID %d is %s%s but the peer's is %s: use -g %d (%s)", ch->gidx,
				 ch->gidx >= 0 ? gid_type_str(ch->gid.type) : "none",
				 gid_is_link_local(ch->gid.raw) ? " link-local" : "", rip, gc.gid.index,
				 gid_desc(&gc.gid, desc, sizeof(desc)));
	} else {
		gid_sockaddr_str((struct sockaddr *)&src, lip, sizeof(lip));
		snprintf(hint, len, "the route to the peer's GID %s leaves from %s, which no GID of %s port %d has "
			 "(wrong device? see 'rdmactl pingpong --check')", rip, lip, ch->dev, ch->port);
	}
	gid_table_free(&t);
}

/* A failed completion whose status says what is wrong, whatever the GIDs. */
static void wc_hint(struct pp_rc *rc, const struct pp_choice *ch, const struct pp_dest *rem, unsigned int size,
		    char *hint, size_t len)
{
	switch (pp_rc_wc_status(rc)) {
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		snprintf(hint, len, "the peer's messages and ours differ in size: use the same -s on both sides (ours "
			 "is %u)", size);
		break;
	case IBV_WC_REM_OP_ERR:
		/* What rxe reports for a message larger than the peer's receive buffer. */
		snprintf(hint, len, "the peer's QP failed on our message: a different -s on the two sides? (ours "
			 "is %u)", size);
		break;
	case IBV_WC_LOC_QP_OP_ERR:
		/* And what its receiver reports for that message. */
		if (pp_rc_wc_recv(rc))
			snprintf(hint, len, "a message did not fit our receive buffer: a different -s on the two sides? "
				 "(ours is %u)", size);
		break;
	case IBV_WC_RETRY_EXC_ERR:
		gid_hint(ch, rem, hint, len);
		if (!*hint)
			snprintf(hint, len, "the peer does not acknowledge: it is gone, or its address is unreachable");
		break;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		snprintf(hint, len, "the peer posted no receive buffers: it is stuck or not a pingpong");
		break;
	default:
		break;
	}
}

void pp_rc_hint(struct pp_rc *rc, const struct pp_choice *ch, const struct pp_dest *rem, int ret, unsigned int mtu,
		unsigned int size, bool client, char *hint, size_t len)
{
	char rip[INET6_ADDRSTRLEN], rgid[INET6_ADDRSTRLEN];
	int ll, amtu, state;

	*hint = '\0';
	pp_rc_port(rc, &ll, &amtu, &state);
	switch (pp_rc_fail(rc)) {
	case PP_FAIL_RTR:
	case PP_FAIL_RTS:
		if (pp_mtu_from_enum(amtu) < mtu)
			snprintf(hint, len, "-m %u is larger than the port's active MTU %u: use -m %u", mtu,
				 pp_mtu_from_enum(amtu), pp_mtu_from_enum(amtu));
		else if (ll == IBV_LINK_LAYER_ETHERNET)
			gid_hint(ch, rem, hint, len);
		if (!*hint && state != IBV_PORT_ACTIVE)
			snprintf(hint, len, "port %d of %s is not active", ch->port, ch->dev);
		/* The kernel resolves the peer's MAC address at RTR: no neighbour answer ends here. */
		if (!*hint && (ret == -ETIMEDOUT || ret == -EHOSTUNREACH || ret == -ENETUNREACH || ret == -ENODATA))
			snprintf(hint, len, "the peer's GID %s is unreachable: nothing answers for %s on the network (peer "
				 "down, or not at that address?)", gid_str(rem->gid, rgid, sizeof(rgid)),
				 gid_ip_str(rem->gid, rip, sizeof(rip)));
		break;
	case PP_FAIL_STALL:
	case PP_FAIL_WC:
		if (pp_rc_fail(rc) == PP_FAIL_WC)
			wc_hint(rc, ch, rem, size, hint, len);
		if (!*hint && ll == IBV_LINK_LAYER_ETHERNET)
			gid_hint(ch, rem, hint, len);
		if (!*hint && pp_rc_done_iters(rc) == 0 && pp_rc_fail(rc) == PP_FAIL_STALL)
			snprintf(hint, len, "nothing arrived from the peer: its QP failed or it is gone (see its "
				 "output)%s", client ? "" : "; a client on a link-local or RoCE v1 GID looks like this too");
		if (!*hint)
			snprintf(hint, len, "the peer stopped answering: killed, or the link went down");
		break;
	default:
		break;
	}
}
