#include <stdio.h>

int mod127(int x)
{
    return x + 127;
}
