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
 *   JGroupsRecorder NAME RATE SIZE SECONDS
 */
import java.nio.charset.StandardCharsets;
import java.util.Vector;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.jgroups.Message;
import org.jgroups.ReceiverAdapter;
import org.jgroups.View;

public class JGroupsRecorder {
    static synchronized void out(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static JChannel channel;

    static String name(Address a) {
        String n = a == null ? null : channel.getName(a);
        return n != null ? n : String.valueOf(a);
    }

    public static void main(String[] args) throws Exception {
        String me = args[0];
        double rate = Double.parseDouble(args[1]);
        int size = Math.max(64, Integer.parseInt(args[2]));
        double seconds = Double.parseDouble(args[3]);

        channel = new JChannel();  // JGroups' default stack (udp.xml)
        channel.setName(me);
        channel.setReceiver(new ReceiverAdapter() {
            public void viewAccepted(View v) {
                Vector<Address> members = v.getMembers();
                StringBuilder names = new StringBuilder();
                for (Address m : members) names.append(names.length() == 0 ? "\"" : ",\"").append(name(m)).append('"');
                String coord = members.isEmpty() ? "" : name(members.get(0));
                String id = name(v.getVid().getCoordAddress()) + ":" + v.getVid().getId();
                out("{\"k\":\"view\",\"t\":" + System.nanoTime() + ",\"view\":\"" + id
                        + "\",\"members\":[" + names + "],\"coordinator\":\"" + coord + "\"}");
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
            channel.close();
        }));
        channel.connect("ringcast");

        StringBuilder pad = new StringBuilder();
        while (pad.length() < size) pad.append('.');
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long period = rate > 0 ? (long) (1e9 / rate) : 0;
        long next = start;
        long counter = 0;
        while (System.nanoTime() < end) {
            long now = System.nanoTime();
            if (now >= next) {
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
            long wait = Math.min(10_000_000L, Math.max(0, next - System.nanoTime()));
            Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        }
        System.exit(0);
    }
}
