"""Word pairs of Who is Spy, each word with a few words it brings to mind.

Each line holds one pair: two related but different words (which one the civilians get is drawn
per game). After each word come the associations the heuristic bot describes it with; models never
see them. A word appears in one pair only, so a word has one association list.
"""

from __future__ import annotations

from dataclasses import dataclass

# word: associations | word: associations
_PAIRS_TEXT = """
tea: kettle, leaves, herbal, steep, saucer | coffee: beans, roast, espresso, barista, caffeine
sand: beach, desert, dune, hourglass, grains | soil: garden, roots, compost, earthworm, farming
butter: dairy, churn, toast, salted, creamy | margarine: vegetable, tub, substitute, oils, lowfat
piano: keys, pedals, grand, concert, ivory | organ: church, pipes, hymns, cathedral, wedding
guitar: strings, chords, strum, acoustic, frets | violin: bow, orchestra, chin, fiddle, classical
dog: bark, leash, puppy, fetch, loyal | wolf: howl, pack, wild, moon, forest
cat: purr, whiskers, kitten, meow, litter | tiger: stripes, jungle, roar, predator, orange
lion: mane, savanna, pride, king, roar | leopard: spots, tree, stealthy, african, sprint
horse: saddle, gallop, hooves, stable, jockey | donkey: stubborn, burden, bray, farm, mule
rabbit: carrot, burrow, hop, floppy, bunny | hamster: wheel, cage, cheeks, rodent, pet
apple: orchard, cider, crunchy, core, pie | pear: juicy, shaped, orchard, soft, grainy
orange: citrus, peel, juice, vitamin, segments | lemon: sour, yellow, zest, lemonade, squeeze
strawberry: red, seeds, cream, summer, jam | raspberry: bramble, tart, pink, hollow, thorny
banana: peel, monkey, yellow, bunch, tropical | mango: tropical, pit, sweet, india, smoothie
watermelon: summer, seeds, rind, picnic, slice | pumpkin: halloween, carve, autumn, lantern, soup
potato: mashed, fries, starch, peel, tuber | carrot: rabbit, crunchy, beta, root, stew
onion: tears, layers, chop, fried, bulb | garlic: cloves, vampire, breath, pungent, roasted
cucumber: salad, pickle, green, cool, slices | zucchini: squash, grilled, courgette, summer, bread
broccoli: florets, steamed, green, trees, vegetable | cauliflower: white, florets, curd, rice, cheese
rice: bowl, grains, sushi, paddy, steamed | noodles: slurp, ramen, chopsticks, broth, wheat
bread: loaf, bakery, crust, slice, yeast | cake: birthday, frosting, candles, sponge, celebration
cookie: biscuit, chocolate, crumbs, jar, oven | cracker: salty, crispy, cheese, flat, snack
pizza: slice, cheese, oven, delivery, toppings | burger: patty, bun, grill, ketchup, fastfood
sandwich: lunch, slices, filling, picnic, deli | wrap: tortilla, rolled, lunch, filling, folded
soup: bowl, spoon, broth, hot, ladle | stew: thick, meat, slow, pot, hearty
milk: cow, carton, calcium, white, cereal | yogurt: cultures, spoon, creamy, tangy, breakfast
cheese: mouse, cheddar, melted, wheel, aged | tofu: soy, curd, vegan, cubes, bland
chocolate: cocoa, bar, sweet, melt, dark | candy: sugar, wrapper, lollipop, sweets, halloween
honey: bees, hive, sticky, golden, jar | syrup: pancakes, maple, sticky, pour, sweet
salt: shaker, ocean, seasoning, crystals, savory | sugar: sweet, cubes, cane, spoonful, baking
pepper: spicy, grinder, black, sneeze, seasoning | cinnamon: bark, spice, rolls, warm, christmas
wine: grapes, cellar, glass, vineyard, cork | beer: hops, pub, foam, brewery, pint
juice: fruit, squeezed, glass, breakfast, carton | soda: fizzy, bubbles, can, sugary, cola
water: drink, tap, clear, thirst, bottle | ice: frozen, cubes, cold, slippery, melt
bicycle: pedals, chain, helmet, wheels, ride | motorcycle: engine, helmet, biker, throttle, loud
car: engine, drive, wheels, garage, highway | bus: passengers, stop, route, ticket, driver
train: rails, station, carriage, tracks, conductor | tram: street, overhead, city, rails, bell
airplane: wings, pilot, airport, runway, flight | helicopter: rotor, blades, hover, rescue, landing
boat: oars, lake, sail, harbor, float | submarine: underwater, periscope, sonar, navy, dive
rocket: launch, space, countdown, fuel, astronaut | satellite: orbit, signal, dish, gps, antenna
doctor: hospital, stethoscope, patient, medicine, diagnosis | nurse: ward, care, injection, shift, scrubs
teacher: classroom, lesson, homework, chalk, students | professor: university, lecture, research, tenure, campus
police: badge, siren, arrest, patrol, uniform | soldier: army, rifle, camouflage, battle, salute
chef: kitchen, recipe, knife, apron, restaurant | waiter: tray, tips, menu, serving, order
singer: voice, microphone, songs, stage, lyrics | dancer: ballet, steps, rhythm, choreography, stage
painter: canvas, brush, easel, palette, portrait | sculptor: marble, chisel, statue, clay, carve
lawyer: court, case, client, contract, argue | judge: gavel, verdict, courtroom, robe, sentence
farmer: tractor, harvest, fields, barn, crops | gardener: hose, flowers, weeding, shears, hedge
king: crown, throne, royal, kingdom, reign | emperor: empire, rome, conquest, palace, dynasty
prince: royal, heir, castle, charming, crown | knight: armor, sword, horse, quest, chivalry
pirate: ship, treasure, parrot, eyepatch, plank | sailor: navy, deck, knots, anchor, voyage
wizard: spells, wand, robe, beard, magic | witch: broom, cauldron, potion, hat, spells
vampire: fangs, blood, bats, coffin, night | zombie: undead, brains, shamble, horde, apocalypse
ghost: haunted, sheet, spooky, invisible, boo | skeleton: bones, skull, halloween, ribs, spine
angel: wings, halo, heaven, guardian, harp | fairy: tiny, wings, dust, tale, sparkle
dragon: fire, scales, wings, hoard, legend | dinosaur: fossil, extinct, jurassic, bones, reptile
shark: fins, teeth, ocean, jaws, predator | dolphin: clever, clicks, flipper, playful, pod
whale: huge, blowhole, ocean, song, blubber | seal: flippers, ice, fish, bark, harbor
eagle: soar, talons, feathers, bald, prey | hawk: hunting, sharp, circling, falconry, feathers
owl: night, hoot, wise, feathers, hunts | bat: cave, night, wings, echolocation, upside
chicken: eggs, coop, cluck, feathers, farm | duck: quack, pond, webbed, waddle, feathers
bee: hive, buzz, sting, pollen, nectar | wasp: sting, yellow, nest, angry, picnic
butterfly: wings, caterpillar, colorful, flutter, cocoon | moth: lamp, night, dusty, wool, attracted
ant: colony, tiny, queen, crumbs, march | spider: web, eight, legs, silk, creepy
snake: slither, venom, scales, hiss, coil | lizard: scales, sunbathing, tail, reptile, gecko
frog: pond, croak, jump, tadpole, lily | turtle: shell, slow, reptile, pond, hatchling
monkey: bananas, jungle, climb, tail, swing | gorilla: silverback, strong, jungle, chest, ape
elephant: trunk, tusks, ivory, memory, gray | rhinoceros: horn, thick, savanna, charge, armored
giraffe: neck, tall, spots, leaves, savanna | zebra: stripes, black, white, herd, savanna
penguin: waddle, antarctica, tuxedo, ice, flightless | walrus: tusks, whiskers, arctic, blubber, ice
sheep: wool, flock, shepherd, lamb, baa | goat: horns, cheese, climbing, beard, bleat
cow: milk, moo, field, udder, barn | pig: oink, mud, bacon, sty, snout
mouse: cheese, squeak, trap, tiny, rodent | rat: sewer, tail, plague, rodent, city
football: goal, pitch, kick, striker, stadium | basketball: hoop, dribble, court, dunk, tall
tennis: racket, net, court, serve, wimbledon | badminton: shuttlecock, racket, net, feather, smash
golf: club, hole, course, tee, caddie | cricket: bat, wicket, bowler, pitch, innings
swimming: pool, strokes, goggles, lanes, dive | surfing: waves, board, ocean, beach, ride
skiing: snow, slope, poles, mountain, lift | skating: ice, rink, blades, spin, glide
boxing: gloves, ring, punch, knockout, rounds | wrestling: mat, grapple, pin, singlet, throw
chess: board, king, checkmate, pawns, strategy | checkers: board, jump, pieces, crown, draughts
poker: cards, bluff, chips, casino, hand | bingo: numbers, card, hall, caller, dabber
puzzle: pieces, jigsaw, solve, picture, corner | riddle: question, clever, answer, trick, sphinx
movie: cinema, screen, popcorn, actors, director | theater: stage, curtain, play, actors, audience
book: pages, author, chapters, cover, library | magazine: glossy, monthly, articles, subscription, cover
newspaper: headlines, daily, print, journalist, ink | radio: station, broadcast, tune, dial, podcast
television: channels, remote, screen, shows, couch | computer: keyboard, monitor, software, mouse, desktop
phone: call, ring, mobile, screen, dial | tablet: touch, screen, ipad, portable, flat
camera: lens, photo, flash, shutter, snapshot | binoculars: lenses, birdwatching, zoom, distant, pair
watch: wrist, strap, time, ticking, dial | clock: wall, hands, alarm, ticking, hour
lamp: light, bulb, shade, desk, switch | candle: wax, wick, flame, birthday, melt
chair: sit, legs, seat, backrest, table | sofa: couch, cushions, living, comfy, nap
bed: sleep, pillow, mattress, blanket, dream | hammock: swing, trees, relax, woven, beach
table: dinner, legs, wooden, surface, chairs | desk: office, drawers, study, work, computer
door: handle, hinge, knock, open, lock | window: glass, pane, view, curtain, sill
mirror: reflection, glass, vanity, image, bathroom | picture: frame, wall, photo, image, painting
pillow: soft, feathers, sleep, case, fluffy | blanket: warm, wool, cozy, cover, knitted
towel: dry, bath, fluffy, beach, rack | napkin: dinner, paper, lap, wipe, folded
spoon: soup, stir, scoop, cutlery, cereal | fork: prongs, stab, cutlery, pasta, eat
knife: blade, sharp, cut, chop, cutlery | scissors: cut, blades, paper, snip, craft
pen: ink, write, ballpoint, cap, signature | pencil: graphite, eraser, sharpen, sketch, lead
notebook: pages, lined, notes, spiral, school | diary: secrets, daily, personal, lock, entries
backpack: straps, school, hiking, zipper, carry | suitcase: travel, wheels, luggage, packing, airport
umbrella: rain, open, handle, wet, canopy | raincoat: hood, waterproof, yellow, wet, plastic
hat: head, brim, sun, cap, fedora | helmet: protect, head, bike, hard, strap
shoes: laces, feet, heels, pair, sneakers | socks: feet, pair, cotton, drawer, warm
gloves: hands, fingers, winter, pair, leather | mittens: thumbs, knitted, winter, kids, woolly
shirt: buttons, collar, sleeves, ironed, cotton | sweater: wool, knitted, warm, winter, cozy
dress: gown, party, elegant, frock, zipper | skirt: pleated, waist, mini, hem, kilt
jeans: denim, blue, pockets, pants, rivets | shorts: summer, knees, legs, beach, casual
necklace: pendant, chain, neck, jewelry, pearls | bracelet: wrist, charm, bangle, jewelry, beads
ring: finger, wedding, diamond, band, engagement | earring: ear, pierced, stud, hoop, jewelry
lipstick: red, makeup, lips, tube, kiss | perfume: scent, fragrance, bottle, spray, floral
toothbrush: bristles, teeth, morning, bathroom, paste | comb: teeth, hair, plastic, part, pocket
soap: bubbles, wash, lather, bar, clean | shampoo: hair, bottle, lather, shower, suds
shower: water, bathroom, spray, head, morning | bathtub: soak, bubbles, bathroom, porcelain, tap
sun: hot, daylight, bright, rays, summer | moon: night, crescent, lunar, tides, werewolf
star: twinkle, night, sky, constellation, shining | planet: orbit, solar, mars, round, system
rain: drops, umbrella, puddle, clouds, wet | snow: flakes, sled, white, cold, winter
wind: breeze, blow, gust, kite, sails | storm: thunder, lightning, clouds, heavy, hurricane
cloud: sky, fluffy, white, rain, float | fog: mist, grey, thick, visibility, morning
river: flow, bank, stream, bridge, current | lake: still, shore, fishing, freshwater, reflection
ocean: waves, salty, deep, vast, tides | sea: salty, waves, coast, gulls, shore
mountain: peak, climb, summit, snowy, range | hill: slope, green, gentle, climb, sledding
forest: trees, woods, wild, leaves, hiking | jungle: vines, tropical, humid, monkeys, dense
desert: dunes, camel, hot, dry, cactus | island: palm, surrounded, tropical, beach, castaway
volcano: lava, eruption, crater, magma, ash | earthquake: shaking, tremor, fault, richter, rubble
rose: thorns, red, petals, valentine, bouquet | tulip: spring, holland, bulb, petals, colorful
sunflower: yellow, seeds, tall, sunny, field | daisy: white, petals, meadow, chain, yellow
tree: trunk, branches, leaves, bark, roots | bush: shrub, hedge, leaves, trimmed, garden
grass: lawn, green, mow, blades, meadow | moss: damp, green, soft, rocks, shade
house: home, roof, family, rooms, door | apartment: building, flat, rent, floor, neighbors
castle: towers, walls, moat, king, medieval | palace: royal, grand, gardens, queen, luxury
school: classroom, pupils, teachers, lessons, recess | university: degree, campus, lectures, students, graduation
hospital: patients, doctors, ward, emergency, beds | clinic: appointment, small, checkup, doctor, reception
library: books, quiet, borrow, shelves, librarian | bookstore: buy, shelves, novels, cashier, browse
museum: exhibits, history, paintings, guided, artifacts | gallery: art, paintings, exhibition, white, curator
restaurant: menu, waiter, dinner, reservation, tables | cafe: espresso, pastries, cozy, latte, tables
supermarket: groceries, aisles, cart, checkout, shelves | market: stalls, vendors, fresh, bargain, outdoor
bank: money, account, vault, teller, loan | casino: gambling, chips, slots, jackpot, roulette
church: steeple, pray, sunday, priest, bells | temple: worship, incense, monks, sacred, ancient
beach: sand, waves, sunbathe, towel, shells | pool: swim, chlorine, diving, lanes, tiles
park: bench, playground, trees, picnic, stroll | garden: flowers, plants, hose, shed, vegetables
zoo: animals, cages, keepers, visit, enclosures | circus: clown, tent, acrobats, ringmaster, trapeze
airport: flights, terminal, security, gate, luggage | station: platform, trains, tickets, departures, waiting
hotel: rooms, reception, guests, stay, lobby | hostel: backpackers, dorm, cheap, bunk, shared
gym: weights, workout, treadmill, sweat, trainer | yoga: stretch, mat, breathing, poses, calm
doll: toy, girl, plastic, hair, porcelain | teddy: bear, cuddly, stuffed, plush, toy
kite: string, wind, fly, sky, tail | balloon: helium, float, party, pop, inflate
drum: beat, sticks, rhythm, bang, snare | trumpet: brass, blow, fanfare, valves, jazz
flute: wind, breath, silver, holes, woodwind | harmonica: mouth, blues, reeds, pocket, blow
song: melody, lyrics, sing, chorus, tune | poem: verse, rhyme, poet, stanza, lines
letter: envelope, stamp, mail, handwritten, postman | email: inbox, send, digital, spam, attachment
birthday: cake, candles, party, presents, age | wedding: bride, vows, rings, ceremony, groom
christmas: tree, santa, presents, december, carols | thanksgiving: turkey, gratitude, november, feast, family
summer: heat, vacation, sunshine, beach, july | winter: cold, snow, december, coats, frost
spring: blossom, bloom, april, fresh, renewal | autumn: leaves, fall, harvest, october, falling
morning: sunrise, breakfast, early, alarm, dawn | evening: sunset, dinner, dusk, twilight, relax
breakfast: morning, cereal, eggs, toast, coffee | lunch: midday, noon, sandwich, break, meal
doctorate: thesis, research, degree, academic, dissertation | diploma: certificate, graduation, school, scroll, qualification
fire: flames, hot, smoke, burn, matches | lightning: bolt, flash, thunder, storm, electric
gold: shiny, precious, yellow, bars, jewelry | silver: metal, shiny, second, cutlery, coins
diamond: sparkle, precious, hard, carat, ring | pearl: oyster, white, necklace, sea, lustrous
iron: metal, heavy, rust, steel, magnet | copper: metal, wire, orange, penny, pipes
paper: sheet, write, white, print, fold | cardboard: box, brown, packaging, sturdy, recycling
glass: transparent, window, fragile, clear, shatter | plastic: bottle, bag, recycling, synthetic, durable
wood: timber, logs, carpenter, grain, forest | stone: rock, hard, pebble, wall, heavy
hammer: nails, pound, tool, carpenter, hit | screwdriver: screws, turn, tool, phillips, handle
ladder: climb, rungs, steps, reach, height | stairs: steps, climb, floors, railing, banister
key: lock, unlock, jingle, door, metal | password: secret, login, characters, account, forgot
money: cash, coins, wallet, spend, rich | credit: card, debt, loan, bank, score
wallet: cash, cards, leather, pocket, billfold | purse: handbag, coins, clasp, woman, strap
map: directions, roads, navigate, atlas, legend | compass: north, needle, directions, navigate, magnetic
robot: machine, metal, android, automated, circuits | alien: spaceship, ufo, green, extraterrestrial, invasion
dentist: teeth, drill, cavity, braces, floss | optician: glasses, eyes, lenses, chart, frames
marathon: running, miles, race, endurance, finish | sprint: fast, short, dash, race, track
vacation: holiday, travel, relax, trip, resort | weekend: saturday, sunday, rest, days, lazy
"""


@dataclass(frozen=True)
class WordPair:
    index: int
    first: str
    second: str


def _parse() -> tuple[list[WordPair], dict[str, tuple[str, ...]]]:
    pairs: list[WordPair] = []
    associations: dict[str, tuple[str, ...]] = {}
    for line in _PAIRS_TEXT.strip().splitlines():
        words = []
        for half in line.split("|"):
            word, _, assoc = half.partition(":")
            word = word.strip().lower()
            associations[word] = tuple(a.strip().lower() for a in assoc.split(",") if a.strip())
            words.append(word)
        first, second = words
        pairs.append(WordPair(len(pairs), first, second))
    return pairs, associations


WORD_PAIRS, ASSOCIATIONS = _parse()


def associations_of(word: str) -> tuple[str, ...]:
    """The built-in associations of `word` (empty when the word is not in the list)."""
    return ASSOCIATIONS.get(word.strip().lower(), ())
