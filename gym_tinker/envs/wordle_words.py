"""Word lists for Wordle: common and rarer answer words, and extra words accepted as guesses."""

__all__ = ["COMMON_WORDS", "EXTRA_GUESSES", "RARE_WORDS"]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


COMMON_WORDS: tuple[str, ...] = _words(
    """
    about above abuse actor acute admit adopt adult after again agent agree ahead alarm album alert
    alike alive allow alone along alter among anger angle angry apart apple apply apron arena argue
    arise array arrow aside asset audio audit avoid award aware badly baker basic basis beach beard
    began begin begun being below bench berry birth black blade blame blank blast blind block blood
    bloom board bonus boost booth bound brain brand brave bread break breed brick bride brief bring
    broad broke brown brush build built bunch buyer cable candy cargo carry catch cause chain chair
    charm chart chase cheap check cheek cheer chess chest chief child chill chose civil claim class
    clean clear click clock close cloth cloud coach coast couch could count court cover craft crane
    crash crazy cream crime crisp cross crowd crown curve cycle daily dairy daisy dance dated dealt
    death debut delay depth diary dirty doing doubt dozen draft drama drawn dream dress drill drink
    drive drove dying eager eagle early earth eight elbow elite empty enemy enjoy enter entry equal
    error event every exact exist extra faith false fancy fault feast fence fever fiber field fifth
    fifty fight final first fixed flame flash fleet float flood floor flour fluid focus force forth
    forty forum found frame frank fraud fresh front frost fruit fudge fully funny ghost giant given
    glass globe glove going goose grace grade grain grand grant grape graph grass great green gross
    group grown guard guess guest guide habit happy heart heavy hello hence honey honor horse hotel
    house human hurry ideal image index inner input issue jelly jewel joint judge juice knife knock
    known label large laser later laugh layer learn lease least leave legal lemon level lever light
    limit linen lives llama lobby local lodge logic loose lower loyal lucky lunar lunch lying magic
    major maker mango maple march match maybe mayor meant medal media melon mercy merit merry messy
    metal might minor minus mixed model moist money month moral motor mount mouse mouth movie music
    never newly night noble noise north noted novel nurse occur ocean offer often olive onion opera
    orbit order other ought owner paint panel paper party pasta patch pause peace peach pearl penny
    phase phone photo piano piece pilot pitch pizza place plain plane plant plate plaza point porch
    pound power press price pride prime print prior prize proof proud prove pupil puppy purse queen
    quest queue quick quiet quite quote radio rainy raise ranch range rapid ratio razor reach ready
    refer relax reply rhyme ridge right rival river robin robot rocky rough round route royal ruler
    rural salad sauce scale scarf scary scene scope score sense serve seven shade shake shall shape
    share shark sharp sheep sheet shelf shell shift shine shiny shirt shock shoot shore short shout
    shown sight silly since sixth sixty sized skill skirt sleep slice slide slope small smart smell
    smile smoke snack snake sneak solid solve sorry sound south space spare spark speak speed spell
    spend spent spice split spoke spoon sport squad staff stage stair stake stamp stand start state
    steak steal steam steel stick still stock stone stood store storm story stove straw strip stuck
    study stuff style sugar suite sunny super swamp sweat sweep sweet swift swing sword syrup table
    taken taste teach teddy teeth thank theft their theme there these thick thing think third those
    three threw throw tiger tight tired title toast today tooth topic torch total touch tough tower
    toxic trace track trade trail train treat trend trial tribe trick tried truck truly trust truth
    tulip twice uncle under union unity until upper upset urban usage usual vague valid value video
    virus visit vital vivid vocal voice vowel wagon waist waste watch water weird whale wheat wheel
    where which while white whole whose witch woman women world worry worse worst worth would wound
    write wrong wrote yacht yield young youth zebra
    """
)
"""Everyday five-letter words: the easy answer pool."""

RARE_WORDS: tuple[str, ...] = _words(
    """
    abide acorn adobe adore aging agony aisle alibi alien align allay alley allot aloft aloof aloud
    alpha amaze amber amend ample amuse angel angst ankle annex anvil aorta arbor ardor armor aroma
    ascot ashen askew atlas attic augur avail avert awake awful axiom azure bacon badge bagel banal
    banjo barge baron basil basin baste batch baton batty bayou beady beast befit beige belch belie
    belly birch bland bleak bleed blend bless blink bliss blown bluff blunt blurt blush boast bongo
    bossy botch bough bowel boxer brace braid brake brass bravo brawl brawn briar brine brink briny
    brisk brood brook broom broth brunt brute buddy budge buggy bugle bulge bulky bully bumpy bunny
    burly burst bushy butte cabin cacao cache cadet camel canal canoe caper carat carol caste cater
    caulk cease cedar chafe chaff chalk champ chant chaos chard cheat chick chide chili chime chimp
    chirp choir chord chunk chute cider cigar cinch civic clamp clang clank clash clasp cleat cleft
    clerk cliff climb cling cloak clove clown cluck clump comet comfy comic comma conch condo coral
    corny cough coupe coven covet cower coyly cramp crank crass crate crave crawl creak creed creek
    creep crepe crept crier croak crock crone crony crook croup crude cruel crumb crush crust crypt
    cubic cumin cupid curio curly curry curse cutie cynic dandy datum daunt debit debug decal decay
    decor decoy defer deign deity delta delve demon denim dense depot deter detox deuce digit dimly
    diner dingo dingy dirge disco ditch ditto ditty diver dizzy dodge dogma dolly donor donut dopey
    dotty dough dowdy dowel downy dowry drain drake drape drawl dread dried drier drift droll drone
    drool droop dross drown druid dryer dryly duchy dully dummy dumpy dunce dusky dusty duvet dwarf
    dwell easel eaten ebony edict eerie egret eject elder elect elegy elfin elope elude embed ember
    emcee enact endow ennui ensue envoy epoch epoxy equip erase erect erode essay ethic ethos evade
    evict evoke exalt excel exert exile expat expel extol exult fable facet fairy farce fatal fauna
    feign feint femur feral ferry fetal fetch fetid fewer fiery filet filly filmy filth finch fishy
    fjord flail flair flake flaky flank flare flask flesh flick flier fling flint flirt flock flora
    floss flown flunk flush flute foamy foggy folly foray forge forgo forte foyer frail freak friar
    fried frill frisk frock frond froth frown froze fungi furry fuzzy gaffe gaily gamer gamma gamut
    gaudy gauge gaunt gauze gavel gawky gecko genie genre ghoul giddy girly girth gland glare glaze
    gleam glide glint gloat gloom glory gloss glyph gnash gnome godly golem goner gooey goofy gouge
    gourd graft grasp grate gravy graze greed greet grief grill grime grimy grind gripe groan groin
    groom grope grout grove growl gruel grunt guano guava guild guile guilt guise gulch gully gumbo
    gummy gusto hairy handy hardy harsh haste hasty hatch haunt haven havoc hazel heady hedge hefty
    heist helix heron hilly hinge hippo hitch hoard hobby hoist holly horde hotly hound hover howdy
    humid humor humus hunch hunky husky hutch hydro hyena icily icing idiom idler idyll igloo impel
    inane inept inert infer ingot inlay inlet irony islet itchy ivory jaunt jazzy jerky jetty jiffy
    joist joker jolly joust juicy jumbo jumpy karma kayak kebab khaki kiosk kitty knack knave knead
    kneel knelt koala lager lance lanky lapel lapse lasso latch lathe latte leafy leapt ledge leech
    leery lefty leggy lemur libel liege lilac limbo liner lingo lipid liver livid loamy loath locus
    lofty login loopy lorry lotus louse lousy lover lowly lucid lumpy lunge lurch lyric macaw madam
    mafia magma maize mambo mange mania manic manly manor marry marsh mason matte mauve maxim mealy
    meaty medic melee metro micro midge midst milky mimic mince mirth miser mocha modem mogul molar
    moldy moody moose morph mossy motel motto mound mourn mousy mucky muddy mulch mummy mumps mural
    murky mushy musky musty myrrh nacho nadir naive nanny nasal nasty natty naval neigh nerdy nerve
    newer nicer niche nifty ninja nobly noisy nomad notch nudge nutty nylon nymph oaken oasis octal
    offal olden omega opium optic orate organ otter ounce outdo outer ovary ovate overt ovoid oxide
    ozone paddy pagan paler pansy papal parka parry paste patio patty payee pecan pedal pence penne
    peony perch peril perky pesky petal petty phony picky piety piggy pinch pinky pious piper pique
    pithy pivot pixel pixie plaid plank plead pleat plumb plume plump plunk plush poach poise poker
    polar polka polyp pooch poppy poser posse pouch pouty prank prawn preen prism privy probe prone
    prong prose prowl proxy prude prune psalm pudgy puffy pulpy pulse punch puree purge pushy pygmy
    quack quail qualm quart quash quasi quell query quill quilt quirk quota rabbi radar radii rally
    ramen raspy raven rayon realm rebel rebus rebut recap recur regal rehab reign relay relic remit
    renew repay repel rerun resin retch retro revel revue rhino rider rifle rigid rigor rinse ripen
    riper risky rivet roast rodeo rogue roomy roost rotor rouge rover rowdy ruddy rugby rumba rumor
    rupee rusty sable sadly saint salon salsa salty salve sandy sappy sassy satin satyr saucy sauna
    savor savvy scald scalp scaly scamp scant scare scion scoff scold scone scoop scorn scout scowl
    scrap scree screw scrub scrum sedan seize sepia serum setup sever sewer shack shady shaft shaky
    shame shard shave shawl shear sheen shied shirk shone shook shorn shove showy shrew shrub shrug
    shunt shyly siege sieve sigma silky sinew sinus siren skate skier skiff skimp skulk skull skunk
    slack slain slang slant slash slate sleek sleet slept slick slime slimy sling slosh sloth slump
    slunk slurp slush slyly smack smash smear smelt smirk smite smock smoky snafu snail snare sneer
    snide sniff snoop snore snort snowy snuck snuff soapy sober soggy solar sonar sonic sooty soupy
    spade spank spasm spawn spear speck spelt spicy spiel spike spill spine spiny spire spite splat
    splay spoil spoof spook spool spore spout spray spree sprig spunk spurn spurt squat squid stack
    stain stale stalk stall stank stare stark stave stead steed steep steer stern stiff stilt sting
    stink stint stoic stoke stole stomp stony stool stoop stork stout strap stray strum strut stump
    stung stunt suave sulky surge surly sushi swami swarm swath swear swell swept swill swine swirl
    swoop swore sworn swung synod tabby taboo tacit taffy taint tally talon tamer tango tangy taper
    tardy tarot tasty tatty taunt tawny teary tease tempo tenet tenor tense tenth tepid terse theta
    thief thigh thorn thumb thump thyme tiara tibia tidal tilde timer timid tipsy titan tithe toddy
    token tonic topaz torso torus totem toxin trait tramp trash trawl tread trice trite troll troop
    trope trout trove truce truer truss tryst tubby tumor tuner tunic tutor twang tweak tweed twine
    twirl twist udder ulcer ultra umbra uncut unfit unify unmet unset untie unzip upend usher usurp
    utter valet valor valve vapid vapor vault vaunt vegan venom venue verge verse vicar vigil vigor
    vinyl viola viper viral visor vista vixen vodka vogue vouch wacky wafer wager waive waltz weary
    weave wedge weedy whack wharf whelp whiff whine whirl whisk whoop widen widow width wield wimpy
    wince winch windy wiser wispy witty woken woody woozy wordy woven wrath wreck wrest wring wrist
    wrung yearn yeast yodel yummy zesty zonal
    """
)
"""Less common five-letter words (none in :data:`COMMON_WORDS`): the hard answer pool."""

EXTRA_GUESSES: tuple[str, ...] = _words(
    """
    adapt adieu affix afoot agile alloy antic aphid areas arose arson aspen atoll aunty avian awash
    awoke axial bands banks bases bathe beefy bells beret bevel bilge binge bingo biome birds bison
    bitty blare blimp bloat bloke blond blurb boats bones books boots borax bored bosom bowed bream
    broil burnt burro cabal cameo canny canon cards cares caret carve cases catty cello cells chasm
    chewy choke chore chump churn clack clone coats cobra cocoa codes coins colon color combo cones
    conic cooks copse cores corps costs crack credo crest crews daddy dally dates deals debar decks
    decry deeds deify demur derby desks devil dicey diets doors drank drops drums drunk ducks dunes
    dwelt eater edges edify email emote erupt ether exits faces facts fails faint farms fatty favor
    fears feels fella felon ficus fiend filer files fills films finds fines fires firms fixer fizzy
    flags fleck flout flows fluff fluke flume flung flyer focal foist folio foods fools forms freer
    frogs fugue funky furor fussy gains gassy gates gazer gears geeky gifts girls giver glade glean
    goals goods goody gorge grail grave grips gruff guppy gusty hairs halls halve hands harpy hates
    heads heals heard hears heath heats heave heels helps herbs hides hills hints hippy holds holes
    homes hooks hopes horns hosts hours hovel humph ideas idiot inbox incur indie inter intro ionic
    irate items jaded joins jokes juror kappa kazoo keeps kicks kings kites knees knoll knots lakes
    lamps lands lanes larva leach leads leaks leash lends lifts liken likes limbs lines links lions
    lists liter lithe loads loans locks looks loops lords loser loses loves lumen lungs lurid lymph
    macho madly maids mails makes males malls marks masks meals means meats meets melts menus merge
    meter miles milks minds mines minty mists misty mixer modes moles moods moons motif moult moves
    mower mucus mules muted nails names navel necks needs needy nests ninth notes nouns octet odder
    onset opens owing pacts pages pains pairs palms panic parer parks parts paths peaks pears peels
    penal pesto pests picks piles pills pines pinto pipes plait plans plays plots pluck poems poets
    poles pools posit pours primo pulls pumps purer putty quark rabid racer races racks rails rains
    ranks rarer rates react reads rearm reeds remix renal reset rides rings risen riser risks roach
    roads robes rocks roles rolls roofs rooms roots ropes roses rouse rules safer sales salts sands
    saner saute scent scour scram seals seats seeds seeks sells sends serif shank sheer ships shire
    shoes shops shots shuck shush sides signs singe sings sinks sites sizes skins slink slips slots
    slung smith snaps snarl snipe snout socks songs sorts souls soups sower spied spilt spots staid
    stars stash stays steps stops stunk suits sully sumac surer swish swoon tacky tails taker takes
    talks tanks tapes tapir tares tasks taxes teams tears tells tents tepee terms tests testy texts
    throb thrum tiles times tonal tools tours towel towns tract trees triad tries tripe trips trump
    trunk tubal tuber tubes tulle tunes turbo turns tweet twixt tying types undid unfed unite units
    unlit unwed urine users using utile veins verso verve vests views villa voila voter votes vying
    waits walks walls wants wards warns warty waver waves waxen wears weeks weigh wells whiny wight
    wings wires wooer wooly words works wrack wreak wryly yards years zones
    """
)
"""Valid guesses that are never answers (plurals, odder words); disjoint from both pools."""
