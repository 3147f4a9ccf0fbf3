/*
 * ringcast's recorder for JGroups 2.12: one member of a JGroups group on JGroups' default
 * UDP stack (udp.xml: IP multicast discovery, failure detection by FD_SOCK and FD_ALL
 * or FD, NAKACK for reliable FIFO multicast, GMS with view acknowledgements, MERGE2),
 * written for ringcast (nothing of JGroups' code), compiled with javac against Debian's
 * jgroups.jar at first use by ringcast.references.jgroups.build().
 *
 * It multicasts the workload it is given and prints one JSON object a line on stdout,
 * with System.nanoTime() (CLOCK_MONOTONIC on Linux) nanoseconds:
 *
 *   {"k":"view","t":T,"view":"n1:3","members":["n1","n2"],"coordinator":"n1"}
 *   {"k":"submit","t":T,"msg":"n1:7","size":100}
 *   {"k":"deliver","t":T,"msg":"n2:3","size":100}
 *   {"k":"end","t":T,"why":"..."}
 *
 *   JGroupsRecorder NAME RATE SIZE SECONDS [FROM_NS [FIRST]]
 *
 * It sends from the System.nanoTime() instant FROM_NS (at once if 0 or past) for
 * SECONDS, and stays in the group after that until stopped (SIGTERM or SIGINT). Its
 * messages are numbered from FIRST (1 by default; a restarted member starts past its
 * last life's).
 */
import java.nio.charset.StandardCharsets;
import java.util.Vector;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.ReceiverAdapter;
import org.jgroups.View;
import org.jgroups.util.UUID;

public class JGroupsRecorder {
    static synchronized void out(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static JChannel channel;

    /** A member's name in the high half of its UUID (names of up to 8 bytes; 0 for a
     *  longer one): every member can tell whose an address is from the address alone,
     *  where JGroups' cache of logical names misses the members it never heard from (a
     *  node restarted, or one that joined beyond a partition). */
    static long packName(String me) {
        byte[] b = me.getBytes(StandardCharsets.UTF_8);
        if (b.length == 0 || b.length > 8) return 0;
        long v = 0;
        for (int k = 0; k < 8; k++) v = (v << 8) | (k < b.length ? (b[k] & 0xff) : 0);
        return v;
    }

    static String unpackName(long v) {
        byte[] b = new byte[8];
        int n = 0;
        for (int k = 0; k < 8; k++) {
            byte x = (byte) (v >>> (56 - 8 * k));
            if (x == 0) break;
            b[n++] = x;
        }
        return n == 0 ? null : new String(b, 0, n, StandardCharsets.UTF_8);
    }

    /** The member's name as JSON: from its address, else its logical name, else null
     *  (a member this one cannot name). */
    static String name(Address a) {
        String n = null;
        if (a instanceof UUID) n = unpackName(((UUID) a).getMostSignificantBits());
        if (n == null && a != null) n = channel.getName(a);
        return n != null ? "\"" + n + "\"" : "null";
    }

    /** A view's id as every member names it: its creator's UUID (the logical name may be
     *  unknown at some member) and its number. */
    static String viewId(View v) {
        Address c = v.getVid().getCoordAddress();
        String creator = c instanceof UUID ? ((UUID) c).toStringLong() : String.valueOf(c);
        return creator + ":" + v.getVid().getId();
    }

    static final long CLOSE_MS = 5000;

    public static void main(String[] args) throws Exception {
        String me = args[0];
        double rate = Double.parseDouble(args[1]);
        int size = Math.max(64, Integer.parseInt(args[2]));
        double seconds = Double.parseDouble(args[3]);
        long from = args.length > 4 ? Long.parseLong(args[4]) : 0;

        channel = new JChannel();  // JGroups' default stack (udp.xml)
        channel.setName(me);
        final long named = packName(me);
        final java.security.SecureRandom random = new java.security.SecureRandom();
        channel.setAddressGenerator(() -> new UUID(named, random.nextLong()));
        channel.setReceiver(new ReceiverAdapter() {
            public void viewAccepted(View v) {
                Vector<Address> members = v.getMembers();
                StringBuilder names = new StringBuilder();
                for (Address m : members) names.append(names.length() == 0 ? "" : ",").append(name(m));
                String coord = members.isEmpty() ? "null" : name(members.get(0));
                out("{\"k\":\"view\",\"t\":" + System.nanoTime() + ",\"view\":\"" + viewId(v)
                        + "\",\"members\":[" + names + "],\"coordinator\":" + coord + "}");
            }

            public void receive(Message msg) {
                byte[] buf = msg.getBuffer();
                String text = new String(buf, StandardCharsets.UTF_8);
                int cut = text.indexOf(' ');
                String id = cut < 0 ? text : text.substring(0, cut);
                out("{\"k\":\"deliver\",\"t\":" + System.nanoTime() + ",\"msg\":\"" + id
                        + "\",\"size\":" + buf.length + "}");
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            out("{\"k\":\"end\",\"t\":" + System.nanoTime() + ",\"why\":\"stopped\"}");
            // leave the group, but not for longer than CLOSE_MS (a close during a view
            // change can wait on it for long): the member is stopping either way
            Thread closer = new Thread(channel::close);
            closer.setDaemon(true);
            closer.start();
            try {
                closer.join(CLOSE_MS);
            } catch (InterruptedException e) {
                // stopping anyway
            }
        }));
        channel.connect("ringcast");

        StringBuilder pad = new StringBuilder();
        while (pad.length() < size) pad.append('.');
        long start = Math.max(System.nanoTime(), from);
        long end = start + (long) (seconds * 1e9);
        long period = rate > 0 ? (long) (1e9 / rate) : 0;
        long next = start;
        long counter = args.length > 5 ? Long.parseLong(args[5]) - 1 : 0;
        while (true) {  // the workload, then a member until stopped (its shutdown hook)
            long now = System.nanoTime();
            if (now >= next && now < end) {
                counter++;
                String id = me + ":" + counter;
                String body = id + " " + pad.substring(0, Math.max(0, size - id.length() - 1));
                out("{\"k\":\"submit\",\"t\":" + now + ",\"msg\":\"" + id + "\",\"size\":"
                        + body.length() + "}");
                try {
                    channel.send(new Message(null, null, body.getBytes(StandardCharsets.UTF_8)));
                } catch (Exception e) {
                    out("{\"k\":\"send_failed\",\"t\":" + System.nanoTime() + ",\"msg\":\"" + id + "\"}");
                }
                next = period > 0 ? Math.max(next + period, now - period) : now;
            }
            long wait = Math.min(10_000_000L, Math.max(0, (now >= end ? now + 10_000_000L : next) - System.nanoTime()));
            Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        }
    }
}
